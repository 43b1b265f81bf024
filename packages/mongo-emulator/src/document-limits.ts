/**
 * What mongod refuses to store: documents over 16 MiB (BSONObjMaxUserSize) and `_id` values it
 * cannot index (arrays, regexes, undefined, `$`-prefixed field names inside an `_id` document).
 * An insert over the limit is BadValue (2) "object to insert too large"; an update or upsert
 * whose result is over it is error 17419, as in mongod's update stage. A command document over
 * 16 MiB + 16 KiB never gets that far: it is BSONObjectTooLarge (10334) when the message is read.
 */
import { calculateObjectSize } from 'bson';
import { CommandError } from './errors.js';
import { isPlainObject, type Doc } from './values.js';

export const MAX_USER_SIZE = 16 * 1024 * 1024;
export const MAX_INTERNAL_SIZE = MAX_USER_SIZE + 16 * 1024;

const DBREF_FIELDS = new Set(['$ref', '$id', '$db']);

function checkId(id: unknown): void {
  if (Array.isArray(id)) throw new CommandError('BadValue', "can't use an array for _id");
  if (id instanceof RegExp || (id as { _bsontype?: string } | null)?._bsontype === 'BSONRegExp') throw new CommandError('BadValue', "can't use a regex for _id");
  if (id === undefined) throw new CommandError('BadValue', "can't use a undefined for _id");
  if (isPlainObject(id)) {
    const dollar = findDollarField(id);
    if (dollar) throw new CommandError('DollarPrefixedFieldName', `_id fields may not contain '$'-prefixed fields: ${dollar} is not valid for storage.`);
  }
}

function findDollarField(doc: Doc): string | undefined {
  for (const [key, value] of Object.entries(doc)) {
    if (key.startsWith('$') && !DBREF_FIELDS.has(key)) return key;
    if (isPlainObject(value)) {
      const nested = findDollarField(value);
      if (nested) return nested;
    } else if (Array.isArray(value)) {
      for (const el of value) {
        const nested = isPlainObject(el) ? findDollarField(el) : undefined;
        if (nested) return nested;
      }
    }
  }
  return undefined;
}

/** A document about to be inserted (by insert, or by an upsert: `fromUpdate`). */
export function checkInsertable(doc: Doc, fromUpdate = false): void {
  if ('_id' in doc) checkId(doc._id);
  const size = calculateObjectSize(doc);
  if (size > MAX_USER_SIZE) {
    if (fromUpdate) throw tooLargeAfterUpdate();
    throw new CommandError('BadValue', `object to insert too large. size in bytes: ${size}, max size: ${MAX_USER_SIZE}`);
  }
}

/** A document as an update left it. */
export function checkUpdated(doc: Doc): void {
  if (calculateObjectSize(doc) > MAX_USER_SIZE) throw tooLargeAfterUpdate();
}

function tooLargeAfterUpdate(): CommandError {
  return new CommandError('Location17419', `Resulting document after update is larger than ${MAX_USER_SIZE}`);
}
