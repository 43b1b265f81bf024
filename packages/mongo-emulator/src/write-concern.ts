/**
 * Write concern as a one-member replica set answers it: `w` 0, 1 or "majority" is satisfied by
 * the one member; a larger number cannot be (UnsatisfiableWriteConcern 100) and an unknown tag
 * set does not exist (UnknownReplWriteConcern 79). Like mongod, the write is applied and the
 * failure is reported as the reply's `writeConcernError`. A standalone refuses w > 1 outright.
 */
import { CommandError } from './errors.js';
import { isPlainObject, type Doc } from './values.js';

export interface WriteConcernError {
  code: number;
  codeName: string;
  errmsg: string;
  errInfo?: Doc;
}

const FIELDS = new Set(['w', 'j', 'wtimeout', 'wtimeoutMS', 'fsync', 'provenance', 'getLastError']);

/** Validates a command's writeConcern; returns the writeConcernError the reply will carry, if any. */
export function checkWriteConcern(wc: unknown, replicaSet: boolean): WriteConcernError | undefined {
  if (wc === undefined || wc === null) return undefined;
  if (!isPlainObject(wc)) throw new CommandError('FailedToParse', "BSON field 'writeConcern' is the wrong type, expected type 'object'");
  for (const key of Object.keys(wc)) {
    if (!FIELDS.has(key)) throw new CommandError('FailedToParse', `unrecognized write concern field: ${key}`);
  }
  const { w } = wc;
  if (wc.j !== undefined && typeof wc.j !== 'boolean' && typeof wc.j !== 'number')
    throw new CommandError('FailedToParse', 'j must be numeric or a boolean value');
  if (wc.wtimeout !== undefined && typeof wc.wtimeout !== 'number') throw new CommandError('FailedToParse', 'wtimeout must be a number');
  if (w === undefined) return undefined;
  if (typeof w === 'number') {
    if (!Number.isInteger(w) || w < 0 || w > 50)
      throw new CommandError('FailedToParse', `w has to be a non-negative number and not greater than 50; found: ${w}`);
    if (w <= 1) return undefined;
    if (!replicaSet) throw new CommandError('BadValue', "cannot use 'w' > 1 with a standalone");
    return { code: 100, codeName: 'UnsatisfiableWriteConcern', errmsg: 'Not enough data-bearing nodes' };
  }
  if (typeof w === 'string') {
    if (w === 'majority') return undefined;
    if (!replicaSet) return undefined;
    return { code: 79, codeName: 'UnknownReplWriteConcern', errmsg: `No write concern mode named '${w}' found in replica set configuration` };
  }
  if (isPlainObject(w)) throw new CommandError('NotImplemented', 'write concern with a tag-count document as w is not supported by the Loom MongoDB emulator');
  throw new CommandError('FailedToParse', 'w has to be a number or string');
}
