/**
 * mongos's targeting of a query filter, simplified: which ranges of the shard key space a filter
 * can reach. Equalities (and `$in` lists of them) on a prefix of the key fields give points; a
 * range on the next ranged field narrows it; anything else spans the whole key space. A
 * top-level `$or` is the union of its branches. The chunks overlapping the ranges are targeted.
 */
import { MaxKey, MinKey } from 'bson';
import { isPlainObject, type Doc } from '../values.js';
import { MAX_KEY, MIN_KEY, type KeyTuple, type ShardKey } from './shard-key.js';

/** A closed interval of the key space. */
export interface KeyRange {
  min: KeyTuple;
  max: KeyTuple;
}

interface FieldCondition {
  points?: unknown[];
  min?: unknown;
  max?: unknown;
}

/** Beyond this many points a filter is treated as a scan of the whole key space. */
const MAX_POINTS = 1024;

/** The key ranges `filter` can match, or undefined when it can match anywhere. */
export function targetRanges(key: ShardKey, filter: Doc): KeyRange[] | undefined {
  if (Array.isArray(filter.$or) && Object.keys(filter).length === 1) {
    const all: KeyRange[] = [];
    for (const branch of filter.$or) {
      const ranges = isPlainObject(branch) ? targetRanges(key, branch) : undefined;
      if (!ranges) return undefined;
      all.push(...ranges);
    }
    return all;
  }
  let prefixes: KeyTuple[] = [[]];
  for (let i = 0; i < key.fields.length; i++) {
    const cond = fieldCondition(filter, key.fields[i]);
    if (cond?.points) {
      const next: KeyTuple[] = [];
      for (const prefix of prefixes) for (const p of cond.points) next.push([...prefix, key.part(i, p)]);
      if (next.length > MAX_POINTS) return undefined;
      prefixes = next;
      continue;
    }
    // The first field without points: a range on a ranged field narrows, the rest is open.
    const rest = key.fields.length - i - 1;
    const low = !key.hashed[i] && cond?.min !== undefined ? cond.min : MIN_KEY;
    const high = !key.hashed[i] && cond?.max !== undefined ? cond.max : MAX_KEY;
    if (i === 0 && low === MIN_KEY && high === MAX_KEY) return undefined;
    return prefixes.map((p) => ({ min: [...p, low, ...new Array<unknown>(rest).fill(MIN_KEY)], max: [...p, high, ...new Array<unknown>(rest).fill(MAX_KEY)] }));
  }
  return prefixes.map((p) => ({ min: p, max: p }));
}

/** True when the filter pins every shard key field to exactly one value. */
export function hasFullKeyEquality(key: ShardKey, filter: Doc): boolean {
  return key.fields.every((f) => fieldCondition(filter, f)?.points?.length === 1);
}

/** True when the filter is an equality on `_id` (mongos's "exact _id query"). */
export function isExactIdQuery(filter: Doc): boolean {
  return fieldCondition(filter, '_id')?.points?.length === 1;
}

function fieldCondition(filter: Doc, field: string): FieldCondition | undefined {
  if (Object.hasOwn(filter, field)) {
    const found = conditionOf(filter[field]);
    if (found) return found;
  }
  if (Array.isArray(filter.$and)) {
    for (const clause of filter.$and) {
      const found = isPlainObject(clause) ? fieldCondition(clause, field) : undefined;
      if (found) return found;
    }
  }
  return undefined;
}

function isEquality(v: unknown): boolean {
  // Arrays, regular expressions and MinKey/MaxKey do not pin a shard key value.
  return (
    !Array.isArray(v) &&
    !(v instanceof RegExp) &&
    !(v instanceof MinKey) &&
    !(v instanceof MaxKey) &&
    !(isPlainObject(v) && Object.keys(v).some((k) => k.startsWith('$')))
  );
}

function conditionOf(value: unknown): FieldCondition | undefined {
  if (!isPlainObject(value) || !Object.keys(value).some((k) => k.startsWith('$'))) {
    return isEquality(value) ? { points: [value] } : undefined;
  }
  if ('$eq' in value && isEquality(value.$eq)) return { points: [value.$eq] };
  if (Array.isArray(value.$in) && value.$in.length > 0 && value.$in.every(isEquality)) return { points: value.$in };
  const cond: FieldCondition = {};
  if (value.$gte !== undefined) cond.min = value.$gte;
  if (value.$gt !== undefined) cond.min = value.$gt;
  if (value.$lte !== undefined) cond.max = value.$lte;
  if (value.$lt !== undefined) cond.max = value.$lt;
  return cond.min !== undefined || cond.max !== undefined ? cond : undefined;
}
