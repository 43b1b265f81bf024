import { describe, expect, it } from '@jest/globals';
import { ObjectId, type Collection, type Document } from 'mongodb';
import { freshCollectionEachTest } from './target.js';

// Update pipelines as mongod evaluates them: the emulator compiles the common shape ($set of
// top-level fields, the expressions Loom's flow permits are made of) and runs the rest through
// mingo; either way the answers are MongoDB's. Each expected value here is mongod's.
let coll: Collection<Document>;
freshCollectionEachTest('update_pipelines', (_target, fresh) => {
  coll = fresh;
});

const T = (ms: number): Date => new Date(Date.UTC(2026, 0, 1) + ms);

/** The document after `pipeline` updated `doc`. */
async function after(doc: Document, pipeline: Document[], options: { let?: Document } = {}): Promise<Document | null> {
  await coll.insertOne({ _id: 1, ...doc } as never);
  await coll.updateOne({ _id: 1 as never }, pipeline, options);
  return coll.findOne({ _id: 1 as never });
}

describe('update pipelines', () => {
  it('$filter keeps the elements whose condition holds, by $$this or by its own name', async () => {
    const h = [
      { t: 'a', u: T(10) },
      { t: 'b', u: T(30) },
      { t: 'c', u: T(20) },
    ];
    expect(
      await after({ h }, [
        {
          $set: {
            live: { $filter: { input: '$h', cond: { $gte: ['$$this.u', T(20)] } } },
            named: { $filter: { input: '$h', as: 'slot', cond: { $eq: ['$$slot.t', 'a'] } } },
            none: { $filter: { input: '$missing', cond: true } },
          },
        },
      ]),
    ).toEqual({ _id: 1, h, live: [h[1], h[2]], named: [h[0]], none: null });
  });

  it('grants from room computed inside the update: $let, $min/$max, $size, $cond, $slice, $concatArrays', async () => {
    const room = { $max: [0, { $min: [3, { $subtract: [4, { $size: '$h' }] }] }] };
    const items = [{ t: 'x' }, { t: 'y' }, { t: 'z' }];
    const grant = { $let: { vars: { room }, in: { $concatArrays: ['$h', { $cond: [{ $gt: ['$$room', 0] }, { $slice: [items, '$$room'] }, []] }] } } };
    expect(await after({ h: [{ t: 'a' }, { t: 'b' }] }, [{ $set: { h: grant } }])).toEqual({ _id: 1, h: [{ t: 'a' }, { t: 'b' }, { t: 'x' }, { t: 'y' }] });
    await coll.drop();
    expect(await after({ h: [{ t: 'a' }, { t: 'b' }, { t: 'c' }, { t: 'd' }] }, [{ $set: { h: grant } }])).toEqual({
      _id: 1,
      h: [{ t: 'a' }, { t: 'b' }, { t: 'c' }, { t: 'd' }],
    });
    await coll.drop();
    // The last n with a negative count; null in, null out.
    expect(
      await after({ a: [1, 2, 3] }, [{ $set: { last: { $slice: ['$a', -2] }, nil: { $slice: ['$nope', 1] }, joined: { $concatArrays: ['$a', '$nope'] } } }]),
    ).toEqual({
      _id: 1,
      a: [1, 2, 3],
      last: [2, 3],
      nil: null,
      joined: null,
    });
  });

  it('$sum: of one array operand its numbers, of several operands the numbers among them; 0 over nothing', async () => {
    const doc = { s: [{ c: 3 }, { c: 2 }, { x: 1 }, { c: 'x' }], n: 4, e: [] };
    expect(
      await after(doc, [
        {
          $set: {
            path: { $sum: '$s.c' },
            many: { $sum: ['$n', 1.5, 'x', '$missing', [7]] },
            empty: { $sum: '$e' },
            missing: { $sum: '$missing' },
            one: { $sum: '$n' },
          },
        },
      ]),
    ).toEqual({ _id: 1, ...doc, path: 5, many: 5.5, empty: 0, missing: 0, one: 4 });
  });

  it('$min and $max over a path through an array ignore missing values, and are null over nothing', async () => {
    const doc = { h: [{ u: T(5) }, { v: 1 }, { u: T(2) }], e: [] };
    expect(
      await after(doc, [{ $set: { lo: { $min: '$h.u' }, hi: { $max: '$h.u' }, empty: { $min: '$e.u' }, args: { $max: [1, null, 7, '$nope'] } } }]),
    ).toEqual({
      _id: 1,
      ...doc,
      lo: T(2),
      hi: T(5),
      empty: null,
      args: 7,
    });
  });

  it('date arithmetic: $add of a date and milliseconds, $subtract of dates and of milliseconds; null when an operand is missing', async () => {
    expect(
      await after({ d: T(1_000) }, [
        {
          $set: {
            later: { $add: ['$d', 500] },
            gap: { $subtract: ['$d', T(400)] },
            earlier: { $subtract: ['$d', 1_000] },
            sum: { $add: [1, 2, 3] },
            nil: { $add: ['$d', '$nope'] },
          },
        },
      ]),
    ).toEqual({ _id: 1, d: T(1_000), later: T(1_500), gap: 600, earlier: T(0), sum: 6, nil: null });
  });

  it('$ifNull takes the first value that is neither null nor missing; $$REMOVE and $unset drop fields', async () => {
    expect(
      await after({ a: null, b: 2, gone: 1, also: 1 }, [
        { $set: { first: { $ifNull: ['$a', '$nope', '$b'] }, fallback: { $ifNull: ['$nope', 'x'] }, gone: { $cond: [{ $eq: ['$b', 2] }, '$$REMOVE', 0] } } },
        { $unset: ['also'] },
      ]),
    ).toEqual({ _id: 1, a: null, b: 2, first: 2, fallback: 'x' });
  });

  it('keeps the order of existing fields, appends new ones, and omits missing fields of an expression object', async () => {
    const doc = await after({ a: 1, b: 2 }, [{ $set: { c: { x: '$a', y: '$nope' }, a: 10, l: { $literal: { p: '$a' } } } }]);
    expect(doc).toEqual({ _id: 1, a: 10, b: 2, c: { x: 1 }, l: { p: '$a' } });
    expect(Object.keys(doc!)).toEqual(['_id', 'a', 'b', 'c', 'l']);
  });

  it('truthiness and logic: 0, null and missing are false; empty strings and arrays are true', async () => {
    expect(
      await after({ zero: 0, s: '', arr: [] }, [
        {
          $set: {
            r: [
              { $cond: ['$zero', 'y', 'n'] },
              { $cond: ['$s', 'y', 'n'] },
              { $cond: ['$arr', 'y', 'n'] },
              { $cond: { if: '$nope', then: 'y', else: 'n' } },
              { $and: [1, '$s'] },
              { $or: ['$zero', null] },
              { $not: ['$zero'] },
            ],
          },
        },
      ]),
    ).toEqual({ _id: 1, zero: 0, s: '', arr: [], r: ['n', 'y', 'y', 'n', true, false, true] });
  });

  it('orders values across types as BSON does, and a missing value below null', async () => {
    expect(
      await after({ n: 1, s: 'a', nil: null }, [
        {
          $set: {
            r: [{ $lt: ['$n', '$s'] }, { $gt: ['$nil', '$n'] }, { $cmp: ['$s', 'b'] }, { $ne: ['$n', 1] }, { $eq: ['$nope', null] }, { $lt: ['$nope', null] }],
          },
        },
      ]),
    ).toEqual({ _id: 1, n: 1, s: 'a', nil: null, r: [true, false, -1, false, false, true] });
  });

  it("uses the command's let variables, and one compiled pipeline for every document an updateMany matches", async () => {
    await coll.insertMany([{ _id: 1, v: 1 }, { _id: 2, v: 5 }, { _id: 3 }] as never[]);
    await coll.updateMany({}, [{ $set: { w: { $add: [{ $ifNull: ['$v', 0] }, '$$step'] } } }], { let: { step: 10 } });
    expect(await coll.find().sort({ _id: 1 }).toArray()).toEqual([
      { _id: 1, v: 1, w: 11 },
      { _id: 2, v: 5, w: 15 },
      { _id: 3, w: 10 },
    ]);
  });

  it('builds an upserted document through the pipeline', async () => {
    await coll.updateOne({ _id: { n: 'x' } as never }, [{ $set: { h: { $concatArrays: [{ $ifNull: ['$h', []] }, [{ t: 'a' }]] } } }], { upsert: true });
    expect(await coll.findOne({})).toEqual({ _id: { n: 'x' }, h: [{ t: 'a' }] });
  });

  it('gives each document its own token: $toString of an ObjectId, $concat, a nested spec building a missing field', async () => {
    const a = new ObjectId('65a1b2c3d4e5f60718293a4b');
    const b = new ObjectId('65a1b2c3d4e5f60718293a4c');
    await coll.insertMany([
      { _id: a, lease: { owner: 'old', token: 't0', extra: 1 } },
      { _id: b, n: 1 },
    ] as never[]);
    const token = { $concat: [{ $literal: 'round:' }, { $toString: '$_id' }] };
    // Unset first, the lease is a new document made of the nested spec alone.
    await coll.updateMany({}, [{ $unset: ['lease'] }, { $set: { lease: { owner: { $literal: '$w' }, token }, fresh: { token } } }]);
    expect(await coll.find({}).sort({ _id: 1 }).toArray()).toEqual([
      { _id: a, lease: { owner: '$w', token: `round:${a.toHexString()}` }, fresh: { token: `round:${a.toHexString()}` } },
      { _id: b, n: 1, lease: { owner: '$w', token: `round:${b.toHexString()}` }, fresh: { token: `round:${b.toHexString()}` } },
    ]);
    // The same through a stage the emulator leaves to mingo ($replaceWith).
    await coll.updateOne({ _id: a } as never, [{ $replaceWith: { _id: '$_id', hex: { $toString: '$_id' } } }]);
    expect(await coll.findOne({ _id: a } as never)).toEqual({ _id: a, hex: a.toHexString() });
    // A missing operand makes $concat null; $toString of a date is its ISO form.
    await coll.updateOne({ _id: b } as never, [{ $set: { none: { $concat: ['x', '$missing'] }, day: { $toString: T(0) } } }]);
    expect(await coll.findOne({ _id: b } as never)).toMatchObject({ none: null, day: '2026-01-01T00:00:00.000Z' });
  });
});
