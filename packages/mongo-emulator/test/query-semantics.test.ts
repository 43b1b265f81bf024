import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MongoServerError, ObjectId, type Collection, type Document } from 'mongodb';
import { openTarget, type Target } from './target.js';

let t: Target;
let coll: Collection<Document>;
const oid = new ObjectId('65a000000000000000000001');

beforeAll(async () => {
  t = await openTarget();
  coll = t.db.collection('semantics');
  await coll.insertMany([
    { _id: 1 },
    { _id: 2, a: null },
    { _id: 3, a: 1 },
    { _id: 4, a: [0, 5] },
    { _id: 5, a: [{ b: 1 }, { b: 2 }] },
    { _id: 6, a: 'str' },
    { _id: 7, a: new Date(1000) },
    { _id: 8, a: oid },
    { _id: 9, a: [1, 2] },
    { _id: 10, a: { b: 1 } },
  ] as never[]);
});
afterAll(async () => {
  await t.close();
});

const ids = async (filter: Document) => (await coll.find(filter).sort({ _id: 1 }).toArray()).map((d) => d._id);

describe('query semantics that MongoDB defines', () => {
  it('treats null equality as matching missing fields', async () => {
    expect(await ids({ a: null })).toEqual([1, 2]);
    expect(await ids({ a: { $in: [null] } })).toEqual([1, 2]);
    expect(await ids({ a: { $ne: null } })).toEqual([3, 4, 5, 6, 7, 8, 9, 10]);
    expect(await ids({ a: { $exists: false } })).toEqual([1]);
    expect(await ids({ a: { $exists: true } })).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('matches array elements and dotted paths through arrays', async () => {
    expect(await ids({ a: 1 })).toEqual([3, 9]);
    expect(await ids({ a: { $gt: 4 } })).toEqual([4]);
    expect(await ids({ 'a.b': 1 })).toEqual([5, 10]);
    expect(await ids({ a: [1, 2] })).toEqual([9]);
    expect(await ids({ a: { $size: 2 } })).toEqual([4, 5, 9]);
    expect(await ids({ a: { $all: [1, 2] } })).toEqual([9]);
    expect(await ids({ a: { $elemMatch: { b: 2 } } })).toEqual([5]);
  });

  it('follows dotted paths into sub-documents and arrays, negations holding when no value on the path matches', async () => {
    const paths = t.db.collection('semantics_paths');
    await paths.insertMany([
      { _id: 1, lease: { token: 'x' }, steps: [] },
      { _id: 2, lease: { token: 'y' }, steps: [{ kind: 'step' }, { kind: 'enqueue' }] },
      { _id: 3, lease: 'x', steps: [{ kind: 'step' }, 7, { other: 1 }] },
      { _id: 4, steps: { kind: 'enqueue' } },
      { _id: 5, lease: { token: ['x', 'z'] }, steps: [{ kind: ['a', 'enqueue'] }] },
      { _id: 6, lease: [{ token: 'x' }, { token: 'q' }], steps: [{ sub: [{ kind: 'enqueue' }] }] },
    ] as never[]);
    const found = async (filter: Document) => (await paths.find(filter).sort({ _id: 1 }).toArray()).map((d) => d._id);
    expect(await found({ 'lease.token': 'x' })).toEqual([1, 5, 6]);
    expect(await found({ 'lease.token': { $eq: 'x' }, 'steps.kind': { $ne: 'enqueue' } })).toEqual([1, 6]);
    expect(await found({ 'lease.token': { $ne: 'x' } })).toEqual([2, 3, 4]);
    expect(await found({ 'lease.token': { $in: ['y', 'q'] } })).toEqual([2, 6]);
    expect(await found({ 'lease.token': { $nin: ['x', 'y'] } })).toEqual([3, 4]);
    expect(await found({ 'lease.token': { $gt: 'x' } })).toEqual([2, 5]);
    expect(await found({ 'lease.token': { $exists: true } })).toEqual([1, 2, 5, 6]);
    expect(await found({ 'steps.kind': { $exists: false } })).toEqual([1, 6]);
    expect(await found({ 'steps.sub.kind': 'enqueue' })).toEqual([6]);
    expect(await found({ $or: [{ 'steps.kind': 'enqueue' }, { _id: 1 }] })).toEqual([1, 2, 4, 5]);
    expect(await found({ $and: [{ 'lease.token': 'x' }, { $or: [{ 'steps.kind': { $exists: false } }, { _id: { $gte: 5 } }] }] })).toEqual([1, 5, 6]);
  });

  it('brackets comparisons by type', async () => {
    expect(await ids({ a: { $gte: 0 } })).toEqual([3, 4, 9]);
    expect(await ids({ a: { $lt: new Date(2000) } })).toEqual([7]);
    expect(await ids({ a: { $gt: 'a' } })).toEqual([6]);
    expect(await ids({ a: oid })).toEqual([8]);
    expect(await ids({ a: { $in: [oid, 'str'] } })).toEqual([6, 8]);
  });

  it('filters by the BSON types it can tell apart and refuses the ones it cannot', async () => {
    expect(await ids({ a: { $type: 'string' } })).toEqual([6]);
    expect(await ids({ a: { $type: 'date' } })).toEqual([7]);
    expect(await ids({ a: { $type: 'array' } })).toEqual([4, 5, 9]);
    expect(await ids({ a: { $type: 'objectId' } })).toEqual([8]);
  });

  it('rejects unknown operators with BadValue', async () => {
    const err = await coll
      .find({ a: { $frob: 1 } })
      .toArray()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MongoServerError);
    expect((err as MongoServerError).code).toBe(2);
    expect((err as MongoServerError).message).toContain('$frob');
  });
});
