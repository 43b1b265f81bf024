/**
 * MongoDB's BSON comparison order, used for sorting and index keys. mingo orders values by JS
 * type and compares bson classes by `toString()` (so `Long(10) < Long(9)` and ObjectIds sort
 * after Dates); MongoDB instead brackets by canonical type:
 * MinKey < null/missing < numbers < strings < objects < arrays < BinData < ObjectId < Boolean
 * < Date < Timestamp < RegExp < MaxKey, with numbers compared by value across int/long/double.
 */
import type { Binary, Decimal128, Long, ObjectId, Timestamp } from 'bson';

export const enum TypeRank {
  /** Below every type: the rank of `LOWEST`. */
  Lowest = 0,
  MinKey = 1,
  Null = 2,
  Number = 3,
  String = 4,
  Object = 5,
  Array = 6,
  BinData = 7,
  ObjectId = 8,
  Boolean = 9,
  Date = 10,
  Timestamp = 11,
  RegExp = 12,
  MaxKey = 13,
  /** Above every type: the rank of `HIGHEST`. */
  Highest = 99,
}

/** A bound that sorts before (`side` -1) or after (+1) every value of one canonical type. */
export class TypeBound {
  constructor(
    readonly rank: TypeRank,
    readonly side: -1 | 1,
  ) {}
}

/** Sorts before / after every value of every type (index scan ends). */
export const LOWEST = new TypeBound(TypeRank.Lowest, -1);
export const HIGHEST = new TypeBound(TypeRank.Highest, 1);

function bsonType(v: object): string | undefined {
  return (v as { _bsontype?: string })._bsontype;
}

/** The `_bsontype` of a BSON class instance; undefined for anything else. */
function bsonTypeOf(v: unknown): string | undefined {
  return typeof v === 'object' && v !== null ? bsonType(v) : undefined;
}

/** An ObjectId's 24 hex digits (what mongod's `$toString` makes of it); undefined for any other value. */
export function objectIdHex(v: unknown): string | undefined {
  return bsonTypeOf(v) === 'ObjectId' ? (v as { toHexString(): string }).toHexString() : undefined;
}

export function typeRank(v: unknown): TypeRank {
  if (v === undefined || v === null) return TypeRank.Null;
  switch (typeof v) {
    case 'number':
    case 'bigint':
      return TypeRank.Number;
    case 'string':
      return TypeRank.String;
    case 'boolean':
      return TypeRank.Boolean;
    case 'object':
      break;
    default:
      return TypeRank.Object;
  }
  if (v instanceof TypeBound) return v.rank;
  if (Array.isArray(v)) return TypeRank.Array;
  if (v instanceof Date) return TypeRank.Date;
  if (v instanceof RegExp) return TypeRank.RegExp;
  switch (bsonType(v)) {
    case 'Long':
    case 'Int32':
    case 'Double':
    case 'Decimal128':
      return TypeRank.Number;
    case 'ObjectId':
      return TypeRank.ObjectId;
    case 'Binary':
      return TypeRank.BinData;
    case 'Timestamp':
      return TypeRank.Timestamp;
    case 'BSONRegExp':
      return TypeRank.RegExp;
    case 'BSONSymbol':
      return TypeRank.String;
    case 'MinKey':
      return TypeRank.MinKey;
    case 'MaxKey':
      return TypeRank.MaxKey;
    default:
      return TypeRank.Object;
  }
}

/** A JS number or bigint for any BSON numeric value. */
export function numericValue(v: unknown): number | bigint {
  if (typeof v === 'number' || typeof v === 'bigint') return v;
  switch (bsonType(v as object)) {
    case 'Long': {
      const l = v as Long;
      const n = l.toNumber();
      return Number.isSafeInteger(n) ? n : BigInt(l.toString());
    }
    case 'Int32':
    case 'Double':
      return (v as { value: number }).value;
    case 'Decimal128':
      return Number((v as Decimal128).toString());
    default:
      return NaN;
  }
}

function compareNumbers(a: number | bigint, b: number | bigint): number {
  if (typeof a === 'number' && Number.isNaN(a)) return typeof b === 'number' && Number.isNaN(b) ? 0 : -1;
  if (typeof b === 'number' && Number.isNaN(b)) return 1;
  if (typeof a === 'bigint' || typeof b === 'bigint') {
    const toBig = (x: number | bigint): bigint | number => (typeof x === 'bigint' ? x : Number.isInteger(x) ? BigInt(x) : x);
    const x = toBig(a);
    const y = toBig(b);
    if (typeof x === 'bigint' && typeof y === 'bigint') return x < y ? -1 : x > y ? 1 : 0;
    return Number(x) < Number(y) ? -1 : Number(x) > Number(y) ? 1 : 0;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return a.length - b.length;
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** bson 7's ObjectId: its 12 bytes as four big-endian 24-bit numbers. */
interface PackedObjectId {
  /** The hex string, as an ObjectId gives it. */
  toString(): string;
  i0?: unknown;
  i1?: unknown;
  i2?: unknown;
  i3?: unknown;
}

const packed = (v: PackedObjectId): boolean => typeof v.i0 === 'number' && typeof v.i1 === 'number' && typeof v.i2 === 'number' && typeof v.i3 === 'number';

/**
 * ObjectIds in byte order. The numbers bson 7 keeps compare in that order directly; the hex
 * strings (the other representation, and the fallback) cost two strings built per comparison, a
 * third of an index insert's CPU under an ObjectId `_id` tie-breaker.
 */
function compareObjectIds(a: PackedObjectId, b: PackedObjectId): number {
  if (!packed(a) || !packed(b)) return compareStrings(a.toString(), b.toString());
  if (a.i0 !== b.i0) return (a.i0 as number) < (b.i0 as number) ? -1 : 1;
  if (a.i1 !== b.i1) return (a.i1 as number) < (b.i1 as number) ? -1 : 1;
  if (a.i2 !== b.i2) return (a.i2 as number) < (b.i2 as number) ? -1 : 1;
  if (a.i3 !== b.i3) return (a.i3 as number) < (b.i3 as number) ? -1 : 1;
  return 0;
}

function sign(n: number): number {
  return n < 0 ? -1 : n > 0 ? 1 : 0;
}

/** Compares two BSON values in MongoDB's order; returns -1, 0 or 1. */
export function compareBson(a: unknown, b: unknown): number {
  // Fast paths for the common same-type cases (index scans compare millions of these).
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'number' && typeof b === 'number' && a === a && b === b) return a < b ? -1 : a > b ? 1 : 0;
  if (a instanceof Date && b instanceof Date) return sign(a.getTime() - b.getTime());
  // Index keys: an ObjectId `_id` ends most of them, and an absent field is null (both missing and
  // null are the Null type, equal). Each was two typeRank walks per comparison.
  if (a == null && b == null) return 0;
  if (bsonTypeOf(a) === 'ObjectId' && bsonTypeOf(b) === 'ObjectId') return compareObjectIds(a as PackedObjectId, b as PackedObjectId);
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (a instanceof TypeBound || b instanceof TypeBound) {
    if (ra !== rb) return ra < rb ? -1 : 1;
    const sa = a instanceof TypeBound ? a.side : 0;
    const sb = b instanceof TypeBound ? b.side : 0;
    return sign(sa - sb);
  }
  if (ra !== rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case TypeRank.Null:
    case TypeRank.MinKey:
    case TypeRank.MaxKey:
      return 0;
    case TypeRank.Number:
      return compareNumbers(numericValue(a), numericValue(b));
    case TypeRank.String:
      return compareStrings(String(a), String(b));
    case TypeRank.Boolean:
      return a === b ? 0 : a ? 1 : -1;
    case TypeRank.Date:
      return sign((a as Date).getTime() - (b as Date).getTime());
    case TypeRank.ObjectId:
      return compareObjectIds(a as PackedObjectId, b as PackedObjectId);
    case TypeRank.BinData: {
      const x = a as Binary;
      const y = b as Binary;
      if (x.position !== y.position) return x.position < y.position ? -1 : 1;
      if (x.sub_type !== y.sub_type) return x.sub_type < y.sub_type ? -1 : 1;
      return sign(compareBytes(x.buffer.subarray(0, x.position), y.buffer.subarray(0, y.position)));
    }
    case TypeRank.Timestamp: {
      const x = a as Timestamp;
      const y = b as Timestamp;
      return x.t !== y.t ? (x.t < y.t ? -1 : 1) : x.i !== y.i ? (x.i < y.i ? -1 : 1) : 0;
    }
    case TypeRank.RegExp: {
      const x = a as { source?: string; pattern?: string; flags?: string; options?: string };
      const y = b as typeof x;
      const c = compareStrings(x.source ?? x.pattern ?? '', y.source ?? y.pattern ?? '');
      return c !== 0 ? c : compareStrings(x.flags ?? x.options ?? '', y.flags ?? y.options ?? '');
    }
    case TypeRank.Array: {
      const x = a as unknown[];
      const y = b as unknown[];
      const n = Math.min(x.length, y.length);
      for (let i = 0; i < n; i++) {
        const c = compareBson(x[i], y[i]);
        if (c !== 0) return c;
      }
      return sign(x.length - y.length);
    }
    default:
      return compareObjects(a as Record<string, unknown>, b as Record<string, unknown>);
  }
}

function compareObjects(a: Record<string, unknown>, b: Record<string, unknown>): number {
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  const n = Math.min(ka.length, kb.length);
  for (let i = 0; i < n; i++) {
    const ta = typeRank(a[ka[i]]);
    const tb = typeRank(b[kb[i]]);
    if (ta !== tb) return ta < tb ? -1 : 1;
    const cn = compareStrings(ka[i], kb[i]);
    if (cn !== 0) return cn;
    const cv = compareBson(a[ka[i]], b[kb[i]]);
    if (cv !== 0) return cv;
  }
  return sign(ka.length - kb.length);
}

/**
 * A string that is equal for two values exactly when compareBson says they are equal
 * (1, 1.0 and Long(1) share one key). Used to key documents by `_id` and unique index entries.
 */
export function valueKey(v: unknown): string {
  const rank = typeRank(v);
  switch (rank) {
    case TypeRank.Null:
      return 'z';
    case TypeRank.MinKey:
      return 'm';
    case TypeRank.MaxKey:
      return 'M';
    case TypeRank.Number: {
      const n = numericValue(v);
      if (typeof n === 'number' && Object.is(n, -0)) return 'n0';
      return 'n' + String(n);
    }
    case TypeRank.String:
      return 's' + JSON.stringify(String(v));
    case TypeRank.Boolean:
      return v ? 'b1' : 'b0';
    case TypeRank.Date:
      return 'd' + (v as Date).getTime();
    case TypeRank.ObjectId:
      return 'i' + (v as ObjectId).toString();
    case TypeRank.Timestamp:
      return 't' + (v as Timestamp).t + '.' + (v as Timestamp).i;
    case TypeRank.BinData: {
      const x = v as Binary;
      return 'x' + x.sub_type + ':' + Buffer.from(x.buffer.subarray(0, x.position)).toString('base64');
    }
    case TypeRank.RegExp: {
      const x = v as { source?: string; pattern?: string; flags?: string; options?: string };
      return 'r' + JSON.stringify([x.source ?? x.pattern, x.flags ?? x.options]);
    }
    case TypeRank.Array:
      return 'a[' + (v as unknown[]).map(valueKey).join(',') + ']';
    default: {
      const o = v as Record<string, unknown>;
      return (
        'o{' +
        Object.keys(o)
          .map((k) => JSON.stringify(k) + ':' + valueKey(o[k]))
          .join(',') +
        '}'
      );
    }
  }
}
