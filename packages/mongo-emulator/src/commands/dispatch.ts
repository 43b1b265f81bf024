/**
 * Command dispatch: name lookup (unknown -> CommandNotFound 59), field validation (unknown ->
 * 40415, recognised-but-unsupported -> NotImplemented), transaction resolution, and retry of a
 * non-transactional write that waited for a transaction's document lock.
 */
import { CommandError, notImplemented, toCommandError } from '../errors.js';
import type { Engine } from '../engine.js';
import { SessionRegistry, type Transaction } from '../transactions.js';
import { LockWait } from '../views.js';
import type { Doc } from '../values.js';
import type { CommandContext, CommandSpec, CommandTable } from './context.js';

const GENERIC_FIELDS = new Set([
  '$db',
  'lsid',
  'txnNumber',
  'autocommit',
  'startTransaction',
  '$clusterTime',
  '$readPreference',
  'readConcern',
  'writeConcern',
  'maxTimeMS',
  'comment',
  'apiVersion',
  'apiStrict',
  'apiDeprecationErrors',
  '$audit',
  '$client',
]);

export class Dispatcher {
  constructor(
    private readonly engine: Engine,
    private readonly table: CommandTable,
  ) {}

  async run(db: string, body: Doc, connectionId: number): Promise<Doc> {
    const name = Object.keys(body)[0];
    if (name === undefined) throw new CommandError('FailedToParse', 'Command document is empty');
    this.engine.counts.set(name, (this.engine.counts.get(name) ?? 0) + 1);
    const spec: CommandSpec | undefined = Object.hasOwn(this.table, name) ? this.table[name] : undefined;
    if (!spec) throw new CommandError('CommandNotFound', `no such command: '${name}'`);
    if (spec.adminOnly && db !== 'admin') {
      throw new CommandError('Unauthorized', `${name} may only be run against the admin database.`);
    }
    const fields = new Set(spec.fields);
    for (const field of Object.keys(body).slice(1)) {
      if (GENERIC_FIELDS.has(field) || fields.has(field)) continue;
      if (spec.unsupported?.includes(field)) throw notImplemented(`option '${field}' of command '${name}'`);
      throw new CommandError('IDLUnknownField', `BSON field '${name}.${field}' is an unknown field.`);
    }
    this.checkReadConcern(body);
    const txn = this.resolveTransaction(name, body, spec);
    const sessionKey = body.lsid !== undefined ? SessionRegistry.sessionKey(body.lsid) : undefined;
    const ctx: CommandContext = {
      engine: this.engine,
      db,
      body,
      name,
      txn,
      sessionKey,
      connectionId,
      view: (coll) => this.engine.view(db, coll, txn),
    };
    for (;;) {
      try {
        return await spec.run(ctx);
      } catch (err) {
        if (err instanceof LockWait) {
          await err.until;
          continue;
        }
        throw toCommandError(err);
      }
    }
  }

  private checkReadConcern(body: Doc): void {
    const rc = body.readConcern as Doc | undefined;
    if (rc && (rc.afterClusterTime !== undefined || rc.atClusterTime !== undefined)) {
      throw notImplemented('readConcern afterClusterTime/atClusterTime');
    }
  }

  private resolveTransaction(name: string, body: Doc, spec: CommandSpec): Transaction | undefined {
    if (body.txnNumber === undefined) {
      if (name === 'commitTransaction' || name === 'abortTransaction') {
        throw new CommandError('InvalidOptions', `${name} must be run within a transaction`);
      }
      return undefined;
    }
    if (!this.engine.replicaSet) {
      throw new CommandError('IllegalOperation', 'Transaction numbers are only allowed on a replica set member or mongos');
    }
    const txn = this.engine.sessions.resolve(body, name);
    if (txn && !spec.inTransaction) {
      throw new CommandError('OperationNotSupportedInTransaction', `Cannot run '${name}' in a multi-document transaction.`);
    }
    return txn;
  }
}
