/**
 * The unified test format's "Evaluating Matches": expected values against what the driver
 * returned. Root-level documents may carry extra fields, nested ones may not; arrays match
 * element by element with the same length; numbers compare by value across int/long/double;
 * `$$`-operators ($$exists, $$type, $$unsetOrMatches, $$sessionLsid, $$matchesEntity, $$lte,
 * $$matchAsDocument, $$matchAsRoot) are evaluated as the format defines them.
 */
import { EJSON } from 'bson';
import type { Entities } from './entities.js';

export class MatchError extends Error {
  constructor(path: string, message: string) {
    super(`${path || '<root>'}: ${message}`);
    this.name = 'MatchError';
  }
}

type Doc = Record<string, unknown>;

function isDocument(v: unknown): v is Doc {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  return (v as { _bsontype?: unknown })._bsontype === undefined && !(v instanceof Date) && !(v instanceof RegExp) && !Buffer.isBuffer(v) && !(v instanceof Uint8Array);
}

function bsonType(v: unknown): string | undefined {
  return v !== null && typeof v === 'object' ? ((v as { _bsontype?: string })._bsontype ?? undefined) : undefined;
}

function show(v: unknown): string {
  try {
    return EJSON.stringify(v as never, { relaxed: true });
  } catch {
    return String(v);
  }
}

function operatorOf(v: unknown): string | undefined {
  if (!isDocument(v)) return undefined;
  const keys = Object.keys(v);
  return keys.length === 1 && keys[0].startsWith('$$') ? keys[0] : undefined;
}

function numeric(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  const t = bsonType(v);
  if (t === 'Long' || t === 'Int32' || t === 'Double') return Number((v as { valueOf(): unknown }).valueOf?.() ?? (v as { toNumber(): number }).toNumber());
  return undefined;
}

const TYPES: Record<string, (v: unknown) => boolean> = {
  double: (v) => typeof v === 'number' || bsonType(v) === 'Double',
  string: (v) => typeof v === 'string',
  object: (v) => isDocument(v),
  array: (v) => Array.isArray(v),
  binData: (v) => bsonType(v) === 'Binary' || Buffer.isBuffer(v),
  undefined: (v) => v === undefined,
  objectId: (v) => bsonType(v) === 'ObjectId',
  bool: (v) => typeof v === 'boolean',
  date: (v) => v instanceof Date,
  null: (v) => v === null,
  regex: (v) => v instanceof RegExp || bsonType(v) === 'BSONRegExp',
  javascript: (v) => bsonType(v) === 'Code',
  timestamp: (v) => bsonType(v) === 'Timestamp',
  decimal: (v) => bsonType(v) === 'Decimal128',
  minKey: (v) => bsonType(v) === 'MinKey',
  maxKey: (v) => bsonType(v) === 'MaxKey',
  // The driver promotes int32/int64 to JS numbers, as the Node driver's own runner accepts.
  int: (v) => (typeof v === 'number' && Number.isInteger(v)) || bsonType(v) === 'Int32',
  long: (v) => (typeof v === 'number' && Number.isInteger(v)) || bsonType(v) === 'Long' || typeof v === 'bigint',
};

/** Asserts `actual` matches `expected`; `root` allows extra fields in a document. */
export function match(expected: unknown, actual: unknown, entities: Entities, root = true, path = ''): void {
  const op = operatorOf(expected);
  if (op) {
    special(op, (expected as Doc)[op], actual, entities, root, path);
    return;
  }
  if (isDocument(expected)) {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) {
      throw new MatchError(path, `expected a document ${show(expected)}, got ${show(actual)}`);
    }
    const actualDoc = actual as Doc;
    const get = (k: string) => (actual instanceof Map ? actual.get(k) : actualDoc[k]);
    for (const [key, value] of Object.entries(expected)) {
      const sub = `${path}.${key}`;
      const valueOp = operatorOf(value);
      if (valueOp === '$$exists') {
        const present = actual instanceof Map ? actual.has(key) : get(key) !== undefined;
        if (present !== (value as Doc).$$exists) throw new MatchError(sub, `expected ${(value as Doc).$$exists ? 'present' : 'absent'}, got ${show(get(key))}`);
        continue;
      }
      if (valueOp === '$$unsetOrMatches' && get(key) === undefined) continue;
      if (get(key) === undefined && !(valueOp === '$$type' && includesUndefined((value as Doc).$$type))) {
        throw new MatchError(sub, `expected ${show(value)}, but the field is missing`);
      }
      match(value, get(key), entities, false, sub);
    }
    if (!root) {
      const keys = actual instanceof Map ? [...actual.keys()].map(String) : Object.keys(actualDoc).filter((k) => actualDoc[k] !== undefined);
      const extra = keys.filter((k) => !(k in expected));
      if (extra.length > 0) throw new MatchError(path, `unexpected fields ${extra.join(', ')} in ${show(actual)} (expected ${show(expected)})`);
    }
    return;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) throw new MatchError(path, `expected an array ${show(expected)}, got ${show(actual)}`);
    if (actual.length !== expected.length) throw new MatchError(path, `expected ${expected.length} elements ${show(expected)}, got ${actual.length}: ${show(actual)}`);
    expected.forEach((e, i) => match(e, actual[i], entities, false, `${path}[${i}]`));
    return;
  }
  if (!sameValue(expected, actual)) throw new MatchError(path, `expected ${show(expected)}, got ${show(actual)}`);
}

function includesUndefined(types: unknown): boolean {
  return Array.isArray(types) ? types.includes('undefined') : types === 'undefined';
}

/** Equality of scalars and BSON values, numbers compared by value. */
export function sameValue(expected: unknown, actual: unknown): boolean {
  const en = numeric(expected);
  const an = numeric(actual);
  if (en !== undefined || an !== undefined) {
    if (en === undefined || an === undefined) return false;
    if (Number.isNaN(en) && Number.isNaN(an)) return true;
    return en === an;
  }
  if (expected === null || expected === undefined || typeof expected !== 'object') return expected === actual;
  if (actual === null || typeof actual !== 'object') return false;
  if (expected instanceof Date) return actual instanceof Date && expected.getTime() === actual.getTime();
  const et = bsonType(expected);
  if (et !== bsonType(actual) && !(expected instanceof RegExp || et === 'BSONRegExp')) return false;
  if (isDocument(expected) || Array.isArray(expected)) return exactDocument(expected, actual);
  return show(expected) === show(actual);
}

/** Exact comparison (outcome data): no extra fields anywhere, key order free, numbers by value. */
export function exactDocument(expected: unknown, actual: unknown): boolean {
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => exactDocument(e, actual[i]));
  }
  if (isDocument(expected)) {
    if (!isDocument(actual)) return false;
    const ek = Object.keys(expected);
    const ak = Object.keys(actual).filter((k) => actual[k] !== undefined);
    return ek.length === ak.length && ek.every((k) => k in actual && exactDocument(expected[k], actual[k]));
  }
  return sameValue(expected, actual);
}

function special(op: string, arg: unknown, actual: unknown, entities: Entities, root: boolean, path: string): void {
  switch (op) {
    case '$$exists':
      if ((actual !== undefined) !== arg) throw new MatchError(path, `expected ${arg ? 'present' : 'absent'}, got ${show(actual)}`);
      return;
    case '$$type': {
      const types = Array.isArray(arg) ? arg : [arg];
      if (!types.some((t) => TYPES[t as string]?.(actual))) throw new MatchError(path, `expected type ${types.join('|')}, got ${show(actual)}`);
      return;
    }
    case '$$unsetOrMatches':
      if (actual === undefined || actual === null) return;
      match(arg, actual, entities, root, path);
      return;
    case '$$sessionLsid': {
      const lsid = entities.sessionLsid(arg as string);
      if (!sameValue(lsid, actual) && !exactDocument(lsid, actual)) throw new MatchError(path, `expected the lsid of ${String(arg)}, got ${show(actual)}`);
      return;
    }
    case '$$matchesEntity':
      match(entities.get(arg as string), actual, entities, root, path);
      return;
    case '$$lte': {
      const n = numeric(actual);
      if (n === undefined || n > (arg as number)) throw new MatchError(path, `expected <= ${String(arg)}, got ${show(actual)}`);
      return;
    }
    case '$$matchAsDocument':
      if (typeof actual !== 'string') throw new MatchError(path, `expected an extended JSON string, got ${show(actual)}`);
      match(arg, EJSON.parse(actual, { relaxed: false }), entities, false, path);
      return;
    case '$$matchAsRoot':
      match(arg, actual, entities, true, path);
      return;
    default:
      throw new MatchError(path, `unsupported special operator ${op}`);
  }
}
