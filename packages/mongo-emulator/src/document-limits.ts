/**
 * What mongod refuses to store: documents over 16 MiB (BSONObjMaxUserSize) and `_id` values it
 * cannot index (arrays, regexes, undefined, `$`-prefixed field names inside an `_id` document).
 * An insert over the limit is BadValue (2) "object to insert too large"; an update or upsert
 * whose result is over it is error 17419, as in mongod's update stage. A command document over
 * 16 MiB + 16 KiB never gets that far: it is BSONObjectTooLarge (10334) when the message is read.
 */
import { calculateObjectSize, ObjectId } from 'bson';
import { CommandError } from './errors.js';
import { isPlainObject, type Doc } from './values.js';

export const MAX_USER_SIZE = 16 * 1024 * 1024;
export const MAX_INTERNAL_SIZE = MAX_USER_SIZE + 16 * 1024;

const DBREF_FIELDS = new Set(['$ref', '$id', '$db']);

function checkId(id: unknown): void {
  if (Array.isArray(id)) throw new CommandError('BadValue', "can't use an array for _id");
  if (id instanceof RegExp || (id as { _bsontype?: string } | null)?._bsontype === 'BSONRegExp')
    throw new CommandError('BadValue', "can't use a regex for _id");
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

/*
 * calculateObjectSize measures every key and string in UTF-8 (a fifth of a flow permit's CPU, over
 * an array of hundreds of starts). Nearly every document is far below the limit, which a walk over
 * lengths alone proves: an upper bound of its BSON size (3 UTF-8 bytes per UTF-16 unit at most, 8
 * bytes for any number, 10 digits for any array index). The exact size is computed only when the
 * bound does not settle it, or when a value is of a kind the bound does not know (which includes
 * everything calculateObjectSize would refuse).
 */
const MAX_BOUND_DEPTH = 200;
const ARRAY_KEY_BOUND = 1 + 10 + 1; // type byte, index digits, NUL

function sizeBound(doc: Doc | unknown[], depth: number): number {
  if (depth > MAX_BOUND_DEPTH) return Infinity;
  let total = 5;
  if (Array.isArray(doc)) {
    for (let i = 0; i < doc.length; i++) total += ARRAY_KEY_BOUND + valueBound(doc[i], depth);
    return total;
  }
  if (typeof doc.toBSON === 'function' || typeof doc._bsontype === 'string') return Infinity;
  for (const key of Object.keys(doc)) total += 2 + 3 * key.length + valueBound(doc[key], depth);
  return total;
}

function valueBound(v: unknown, depth: number): number {
  switch (typeof v) {
    case 'string':
      return 5 + 3 * v.length;
    case 'number':
    case 'bigint':
      return 8;
    case 'boolean':
      return 1;
    case 'undefined':
      return 0;
    case 'object':
      if (v === null) return 0;
      if (v instanceof Date) return 8;
      if (Array.isArray(v) || isPlainObject(v)) return sizeBound(v, depth + 1);
      if (v instanceof ObjectId) return 12;
      return Infinity;
    default:
      return Infinity;
  }
}

/** `doc`'s exact size when it is over the limit, else undefined (computed only when the bound does not settle it). */
function overLimit(doc: Doc): number | undefined {
  if (sizeBound(doc, 0) <= MAX_USER_SIZE) return undefined;
  const size = calculateObjectSize(doc);
  return size > MAX_USER_SIZE ? size : undefined;
}

/** A document about to be inserted (by insert, or by an upsert: `fromUpdate`). */
export function checkInsertable(doc: Doc, fromUpdate = false): void {
  if ('_id' in doc) checkId(doc._id);
  const size = overLimit(doc);
  if (size !== undefined) {
    if (fromUpdate) throw tooLargeAfterUpdate();
    throw new CommandError('BadValue', `object to insert too large. size in bytes: ${size}, max size: ${MAX_USER_SIZE}`);
  }
}

/** A document as an update left it. */
export function checkUpdated(doc: Doc): void {
  if (overLimit(doc) !== undefined) throw tooLargeAfterUpdate();
}

function tooLargeAfterUpdate(): CommandError {
  return new CommandError('Location17419', `Resulting document after update is larger than ${MAX_USER_SIZE}`);
}
