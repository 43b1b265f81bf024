import { describe, expect, it } from '@jest/globals';
import { Long } from 'bson';
import { describeUpdate } from '../src/change-log.js';
import { compareBson } from '../src/bson-order.js';
import { isPlainObject, type Doc } from '../src/values.js';
import { random } from './random.js';

// A change event's updateDescription is mongod's element-by-element diff (change-streams.test.ts
// pins its answers through the driver). describeUpdate skips work on what is equal (identical
// values; array elements of the same keys compared key by key, their path built only when
// reported); this checks its output stays exactly that of the plain recursive diff below (the
// implementation before those shortcuts), field order included, on random documents and random
// changes of them.

/** The reference: every key compared, every path built. */
function referenceDiff(before: Doc, after: Doc): Doc {
  const diff = { updatedFields: {} as Doc, removedFields: [] as string[], truncatedArrays: [] as Doc[] };
  const differs = (x: unknown, y: unknown): boolean => compareBson(x, y) !== 0 || Array.isArray(x) !== Array.isArray(y);
  const documents = (a: Doc, b: Doc, prefix: string): void => {
    for (const key of Object.keys(b)) {
      const path = prefix + key;
      if (!(key in a)) diff.updatedFields[path] = b[key];
      else if (isPlainObject(a[key]) && isPlainObject(b[key])) documents(a[key] as Doc, b[key] as Doc, path + '.');
      else if (Array.isArray(a[key]) && Array.isArray(b[key])) arrays(a[key] as unknown[], b[key] as unknown[], path);
      else if (differs(a[key], b[key])) diff.updatedFields[path] = b[key];
    }
    for (const key of Object.keys(a)) if (!(key in b)) diff.removedFields.push(prefix + key);
  };
  const arrays = (a: unknown[], b: unknown[], path: string): void => {
    if (b.length < a.length) diff.truncatedArrays.push({ field: path, newSize: b.length });
    for (let i = 0; i < b.length; i++) {
      if (i >= a.length) diff.updatedFields[`${path}.${i}`] = b[i];
      else if (isPlainObject(a[i]) && isPlainObject(b[i])) documents(a[i] as Doc, b[i] as Doc, `${path}.${i}.`);
      else if (differs(a[i], b[i])) diff.updatedFields[`${path}.${i}`] = b[i];
    }
  };
  documents(before, after, '');
  return diff;
}

const rnd = random(31337);
const int = (n: number): number => Math.floor(rnd() * n);
const KEYS = ['a', 'b', 't', 'u', 'x'];

function scalar(): unknown {
  const pool = [0, -0, 1, 2, NaN, 'x', 'y', '', null, undefined, true, false, new Date(5), new Date(6), new Date(NaN), Long.fromNumber(1), Long.fromNumber(2)];
  return pool[int(pool.length)];
}

function value(depth: number): unknown {
  const r = rnd();
  if (depth > 2 || r < 0.5) return scalar();
  if (r < 0.75) return document(depth + 1);
  return Array.from({ length: int(6) }, () => (rnd() < 0.6 ? { t: `t${int(4)}`, a: new Date(int(3)) } : value(depth + 1)));
}

function document(depth: number): Doc {
  const out: Doc = {};
  for (const k of KEYS) if (rnd() < 0.6) out[k] = value(depth);
  return out;
}

/** A copy of `v` with equal Dates as new objects (as an update's clone has). */
function copy(v: unknown): unknown {
  if (v instanceof Date) return new Date(v.getTime());
  if (Array.isArray(v)) return v.map(copy);
  if (isPlainObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, copy(x)]));
  return v;
}

/** `v` changed at random: mostly kept (shared or copied), sometimes replaced, arrays appended to, trimmed or shifted. */
function mutate(v: unknown, depth: number): unknown {
  const r = rnd();
  if (r < 0.3) return v; // the same reference
  if (r < 0.4) return value(depth);
  if (Array.isArray(v)) {
    const items = v.map((x) => (rnd() < 0.8 ? copy(x) : mutate(x, depth + 1)));
    const how = int(4);
    if (how === 0) items.push(value(depth + 1));
    else if (how === 1) items.shift();
    else if (how === 2) items.splice(int(items.length + 1));
    return items;
  }
  if (isPlainObject(v)) {
    const out: Doc = {};
    const keys = Object.keys(v);
    if (rnd() < 0.1) keys.reverse();
    for (const k of keys) if (rnd() < 0.9) out[k] = mutate(v[k], depth + 1);
    if (rnd() < 0.2) out[KEYS[int(KEYS.length)]] = value(depth + 1);
    return out;
  }
  return rnd() < 0.5 ? copy(v) : scalar();
}

describe('updateDescription', () => {
  it('is exactly the plain recursive diff on random documents and random changes of them', () => {
    for (let i = 0; i < 3000; i++) {
      const before = document(0);
      const after = mutate(before, 0);
      if (!isPlainObject(after)) continue;
      const fast = describeUpdate(before, after);
      const reference = referenceDiff(before, after);
      expect(fast).toStrictEqual(reference);
      expect(Object.keys(fast.updatedFields as Doc)).toEqual(Object.keys(reference.updatedFields as Doc));
    }
  });

  it('reports each changed start of a trimmed array of starts and nothing of an appended one', () => {
    const starts = Array.from({ length: 4 }, (_, i) => ({ t: `t${i}`, a: new Date(i) }));
    const before = { _id: 1, s: starts };
    const appended = describeUpdate(before, { _id: 1, s: [...(copy(starts) as Doc[]), { t: 't4', a: new Date(4) }] });
    expect(appended).toEqual({ updatedFields: { 's.4': { t: 't4', a: new Date(4) } }, removedFields: [], truncatedArrays: [] });
    const shifted = describeUpdate(before, { _id: 1, s: [...(copy(starts.slice(1)) as Doc[]), { t: 't4', a: new Date(4) }] });
    expect(Object.keys(shifted.updatedFields as Doc)).toEqual(['s.0.t', 's.0.a', 's.1.t', 's.1.a', 's.2.t', 's.2.a', 's.3.t', 's.3.a']);
  });
});
