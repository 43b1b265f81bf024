import { describe, expect, it } from '@jest/globals';
import type { Collection, Document } from 'mongodb';
import { freshCollectionEachTest } from './target.js';
import { random } from './random.js';
import { compileTopLevelProjection } from '../src/query/top-level-projection.js';
import { mingoProjection } from '../src/query/projection.js';

// find and findAndModify projections of top-level fields as mongod (4.4+) answers them: the
// emulator applies these shapes natively (the rest through mingo), so each expectation here is
// mongod's, field order included (toEqual ignores key order, hence the Object.keys checks).
let coll: Collection<Document>;
freshCollectionEachTest('projection', async (_target, fresh) => {
  coll = fresh;
  await coll.insertOne({ _id: 1 as never, b: 2, s: [1, 2, 3, 4, 5], a: 'x', n: 7, sub: { k: [1, 2, 3] } });
});

async function project(projection: Document): Promise<Document | null> {
  return coll.findOne({ _id: 1 as never }, { projection });
}

describe('find projections of top-level fields', () => {
  it('includes the named fields and _id, in the order of the document', async () => {
    const out = await project({ a: 1, b: true });
    expect(out).toEqual({ _id: 1, b: 2, a: 'x' });
    expect(Object.keys(out!)).toEqual(['_id', 'b', 'a']);
    expect(await project({ _id: 0, a: 1, missing: 1 })).toEqual({ a: 'x' });
    expect(await project({ _id: 1 })).toEqual({ _id: 1 });
  });

  it('excludes the named fields and keeps the rest in order; _id may be named either way beside exclusions', async () => {
    const out = await project({ a: 0, s: false });
    expect(Object.keys(out!)).toEqual(['_id', 'b', 'n', 'sub']);
    expect(await project({ _id: 0 })).toEqual({ b: 2, s: [1, 2, 3, 4, 5], a: 'x', n: 7, sub: { k: [1, 2, 3] } });
    const withId = await project({ _id: 1, a: 0, s: 0, sub: 0 });
    expect(withId).toEqual({ _id: 1, b: 2, n: 7 });
  });

  it('$slice by itself is an exclusion: every other field comes back, the array cut in its place', async () => {
    const out = await project({ s: { $slice: -2 } });
    expect(out).toEqual({ _id: 1, b: 2, s: [4, 5], a: 'x', n: 7, sub: { k: [1, 2, 3] } });
    expect(Object.keys(out!)).toEqual(['_id', 'b', 's', 'a', 'n', 'sub']);
    expect(await project({ _id: 0, a: 0, s: { $slice: 2 } })).toEqual({ b: 2, s: [1, 2], n: 7, sub: { k: [1, 2, 3] } });
  });

  it.each([
    [0, []],
    [2, [1, 2]],
    [-2, [4, 5]],
    [10, [1, 2, 3, 4, 5]],
    [-10, [1, 2, 3, 4, 5]],
    [
      [1, 2],
      [2, 3],
    ],
    [[-2, 1], [4]],
    [
      [-10, 2],
      [1, 2],
    ],
    [[10, 2], []],
    [
      [3, 10],
      [4, 5],
    ],
  ])('$slice %j of [1..5] is %j', async (arg, expected) => {
    expect((await project({ _id: 0, s: { $slice: arg } }))?.s).toEqual(expected);
  });

  it('$slice returns a value that is not an array as it is, and leaves a missing field missing', async () => {
    expect(await project({ a: { $slice: 1 }, n: { $slice: [0, 1] }, sub: { $slice: 1 }, nope: { $slice: 1 } })).toEqual({
      _id: 1,
      b: 2,
      s: [1, 2, 3, 4, 5],
      a: 'x',
      n: 7,
      sub: { k: [1, 2, 3] },
    });
  });

  it('still refuses a mix of inclusions and exclusions', async () => {
    await expect(project({ a: 1, b: 0 })).rejects.toMatchObject({ code: expect.any(Number) });
  });

  it("findOneAndUpdate's projection applies to the document after the update (a flow permit's reply)", async () => {
    const after = await coll.findOneAndUpdate({ _id: 1 as never }, [{ $set: { s: { $concatArrays: ['$s', [6, 7]] } } }], {
      returnDocument: 'after',
      projection: { s: { $slice: -2 } },
    });
    expect(after).toEqual({ _id: 1, b: 2, s: [6, 7], a: 'x', n: 7, sub: { k: [1, 2, 3] } });
    const before = await coll.findOneAndUpdate({ _id: 1 as never }, { $set: { a: 'y' } }, { projection: { a: 1 } });
    expect(before).toEqual({ _id: 1, a: 'x' });
  });
});

describe('find projections of sub-document paths (a job list page: payloadRef.size)', () => {
  it('includes each named path, _id first and the rest in the order of the document', async () => {
    await coll.insertOne({ name: 'n', _id: 2 as never, ref: { fileId: 'f', size: 10 }, other: 1, deep: { a: { b: 1, c: 2 }, d: 3 } });
    const out = await coll.findOne({ _id: 2 as never }, { projection: { 'ref.size': 1, name: 1, 'deep.a.c': 1, 'deep.d': 1 } });
    expect(out).toEqual({ _id: 2, name: 'n', ref: { size: 10 }, deep: { a: { c: 2 }, d: 3 } });
    expect(Object.keys(out!)).toEqual(['_id', 'name', 'ref', 'deep']);
    expect(await coll.findOne({ _id: 2 as never }, { projection: { _id: 0, 'ref.size': 1 } })).toEqual({ ref: { size: 10 } });
  });

  it('leaves out a path through a missing or scalar field, keeps an empty sub-document, and applies a path to the documents of an array', async () => {
    await coll.insertOne({ _id: 3 as never, scalar: 4, empty: {}, list: [{ size: 1, x: 1 }, 5, { x: 2 }] });
    const out = await coll.findOne({ _id: 3 as never }, { projection: { 'scalar.size': 1, 'empty.size': 1, 'missing.size': 1, 'list.size': 1 } });
    expect(out).toEqual({ _id: 3, empty: {}, list: [{ size: 1 }, {}] });
  });

  it('still refuses colliding paths', async () => {
    await expect(project({ sub: 1, 'sub.k': 1 })).rejects.toMatchObject({ code: expect.any(Number) });
  });
});

describe('the native top-level projection against mingo', () => {
  const rnd = random(20261203);
  const int = (lo: number, hi: number): number => lo + Math.floor(rnd() * (hi - lo + 1));
  const FIELDS = ['a', 'b', 'c', 'd', 'e'];
  const value = (): unknown => {
    switch (int(0, 4)) {
      case 0:
        return int(-5, 5);
      case 1:
        return `v${int(0, 9)}`;
      case 2:
        return Array.from({ length: int(0, 8) }, (_, i) => ({ t: `t${i}`, a: new Date(i) }));
      case 3:
        return { x: int(0, 3), y: [int(0, 3)] };
      default:
        return null;
    }
  };
  const doc = (): Document => {
    const out: Document = { _id: int(0, 100) };
    for (const f of FIELDS) if (rnd() < 0.7) out[f] = value();
    return out;
  };
  const pick = (): string[] => FIELDS.filter(() => rnd() < 0.4);

  it('gives the same fields and values as mingo for inclusions (fields in document order)', () => {
    for (let i = 0; i < 300; i++) {
      const spec: Document = Object.fromEntries(pick().map((f) => [f, 1]));
      if (rnd() < 0.3) spec._id = 0;
      if (Object.keys(spec).length === 0) continue;
      const d = doc();
      const fast = compileTopLevelProjection(spec)!(d);
      expect(fast).toEqual(mingoProjection(spec)(d));
      expect(Object.keys(fast)).toEqual(Object.keys(d).filter((k) => k in fast));
    }
  });

  it('gives exactly what mingo gives for exclusions, field order included', () => {
    for (let i = 0; i < 300; i++) {
      const spec: Document = Object.fromEntries(pick().map((f) => [f, 0]));
      if (rnd() < 0.3) spec._id = 0;
      if (Object.keys(spec).length === 0) continue;
      const d = doc();
      const fast = compileTopLevelProjection(spec)!(d);
      const slow = mingoProjection(spec)(d);
      expect(fast).toEqual(slow);
      expect(Object.keys(fast)).toEqual(Object.keys(slow));
    }
  });

  it('cuts arrays as mingo does for every $slice argument', () => {
    for (let i = 0; i < 500; i++) {
      const arg = rnd() < 0.5 ? int(-10, 10) : [int(-10, 10), int(1, 10)];
      const d = { _id: 1, s: Array.from({ length: int(0, 8) }, (_, k) => k) };
      const fast = compileTopLevelProjection({ s: { $slice: arg } })!(d);
      expect(fast.s).toEqual(mingoProjection({ s: { $slice: arg } })(d).s);
    }
  });

  it('leaves every other shape to mingo', () => {
    for (const spec of [
      { 'a.b': 1 },
      { a: 1, s: { $slice: 1 } },
      { a: 1, b: 0 },
      { a: 2 },
      { a: 'x' },
      { s: { $slice: [1, 0] } },
      { s: { $slice: 1.5 } },
      { s: { $slice: [1] } },
      { _id: { $slice: 1 } },
      { s: { $elemMatch: { a: 1 } } },
      { $x: 1 },
    ]) {
      expect(compileTopLevelProjection(spec as Document)).toBeUndefined();
    }
  });
});
