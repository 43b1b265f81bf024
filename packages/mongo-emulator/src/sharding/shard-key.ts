/**
 * A shard key pattern (`{ queue: 1, partition: 1 }`, `{ tenant: 'hashed' }`, or one hashed field
 * among ranged ones) and the key space its chunks divide: a tuple per document, one value per
 * field, where a hashed field's value is replaced by a 64-bit hash of it.
 */
import { createHash } from 'node:crypto';
import { Long, MaxKey, MinKey } from 'bson';
import { compareBson, valueKey } from '../bson-order.js';
import { CommandError } from '../errors.js';
import { formatDoc, getPath, isPlainObject, type Doc } from '../values.js';

export type KeyTuple = unknown[];

export const MIN_KEY = new MinKey();
export const MAX_KEY = new MaxKey();

export class ShardKey {
  readonly fields: string[];
  readonly hashed: boolean[];

  constructor(readonly pattern: Doc) {
    this.fields = Object.keys(pattern);
    this.hashed = this.fields.map((f) => pattern[f] === 'hashed');
  }

  /** Parses `shardCollection`'s `key`: each field 1 (ranged) or 'hashed' (at most one). */
  static parse(raw: unknown): ShardKey {
    if (!isPlainObject(raw) || Object.keys(raw).length === 0) throw new CommandError('InvalidOptions', 'cannot have empty shard key');
    let hashedCount = 0;
    for (const [field, v] of Object.entries(raw)) {
      if (v === 'hashed') hashedCount++;
      else if (v !== 1 && !(typeof v === 'number' && v === 1)) {
        throw new CommandError(
          'BadValue',
          `Shard key ${formatDoc(raw)} is not valid: Values in the shard key pattern must be 1 or 'hashed' (field '${field}')`,
        );
      }
    }
    if (hashedCount > 1) throw new CommandError('BadValue', `Shard key ${formatDoc(raw)} is not valid: A shard key pattern can have at most one hashed field`);
    return new ShardKey(raw);
  }

  get isHashed(): boolean {
    return this.hashed.some(Boolean);
  }

  /** The key-space value of one field: the hash for a hashed field (missing counts as null). */
  part(index: number, value: unknown): unknown {
    return this.hashed[index] ? hashValue(value) : value;
  }

  /** The document's position in the key space (a missing field is null, as since MongoDB 4.4). */
  tupleOf(doc: Doc): KeyTuple {
    return this.fields.map((f, i) => this.part(i, getPath(doc, f) ?? null));
  }

  /** True when the two documents have the same shard key values (compared in BSON order). */
  sameKey(a: Doc, b: Doc): boolean {
    return this.fields.every((f) => compareBson(getPath(a, f) ?? null, getPath(b, f) ?? null) === 0);
  }

  /**
   * mongos's rule for unique indexes on a sharded collection (ShardKeyPattern::
   * isUniqueIndexCompatible): an index starting with `_id`, or one whose fields start with the
   * shard key's fields, in order.
   */
  allowsUniqueIndex(indexKey: Doc): boolean {
    const names = Object.keys(indexKey);
    if (names[0] === '_id') return true;
    return this.fields.every((f, i) => names[i] === f);
  }

  /** True when some index key starts with the shard key's fields (required to shard a non-empty collection). */
  supportedBy(indexKey: Doc): boolean {
    const names = Object.keys(indexKey);
    return this.fields.every((f, i) => names[i] === f && (this.hashed[i] ? indexKey[f] === 'hashed' : indexKey[f] !== 'hashed'));
  }
}

/** Orders two key tuples (or chunk bounds) field by field in BSON order. */
export function compareTuples(a: KeyTuple, b: KeyTuple): number {
  for (let i = 0; i < a.length; i++) {
    const c = compareBson(a[i], b[i]);
    if (c !== 0) return c;
  }
  return 0;
}

/**
 * A 64-bit hash of a value, equal for values MongoDB compares as equal (1, 1.0, Long(1)). Not
 * mongod's hash (an MD5 of the BSON element with a seed): a value lands in a different chunk
 * than on a real cluster, with the same spread.
 */
export function hashValue(value: unknown): Long {
  const digest = createHash('md5').update(valueKey(value)).digest();
  return Long.fromBytesLE([...digest.subarray(0, 8)]);
}
