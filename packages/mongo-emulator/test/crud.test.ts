import { beforeEach, describe, expect, it } from '@jest/globals';
import { Double, Int32, Long, MongoBulkWriteError, ObjectId, type Collection, type Document } from 'mongodb';
import { freshCollectionEachTest, type Target, serverError as error } from './target.js';

let t: Target;
let coll: Collection<Document>;
freshCollectionEachTest('crud', (target, fresh) => {
  t = target;
  coll = fresh;
});

describe('insert', () => {
  it('inserts one and many, generating _id when missing', async () => {
    const one = await coll.insertOne({ a: 1 });
    expect(one.insertedId).toBeInstanceOf(ObjectId);
    const many = await coll.insertMany([{ a: 2 }, { _id: 'x' as never, a: 3 }]);
    expect(many.insertedCount).toBe(2);
    expect(await coll.countDocuments()).toBe(3);
    expect(await coll.findOne({ _id: 'x' as never })).toEqual({ _id: 'x', a: 3 });
  });

  it('reports duplicate _id as 11000 and keeps going when unordered', async () => {
    await coll.insertOne({ _id: 1 as never, v: 'first' });
    const err = await coll.insertMany([{ _id: 2 }, { _id: 1 }, { _id: 3 }, { _id: 2 }] as never[], { ordered: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MongoBulkWriteError);
    const bulk = err as MongoBulkWriteError;
    expect(bulk.code).toBe(11000);
    expect(bulk.insertedCount).toBe(2);
    expect(bulk.writeErrors).toHaveLength(2);
    const errors = [bulk.writeErrors].flat();
    expect(errors.map((w) => w.index)).toEqual([1, 3]);
    expect(errors[0].errmsg).toMatch(/^E11000 duplicate key error collection: \S+ index: _id_ dup key: \{ _id: 1 \}$/);
    expect((await coll.find().sort({ _id: 1 }).toArray()).map((d) => d._id)).toEqual([1, 2, 3]);
    expect(await coll.findOne({ _id: 1 as never })).toEqual({ _id: 1, v: 'first' });
  });

  it('stops at the first error when ordered', async () => {
    const err = (await coll.insertMany([{ _id: 1 }, { _id: 1 }, { _id: 2 }] as never[]).catch((e: unknown) => e)) as MongoBulkWriteError;
    expect(err).toBeInstanceOf(MongoBulkWriteError);
    expect(err.insertedCount).toBe(1);
    expect(await coll.countDocuments()).toBe(1);
  });
});

describe('find', () => {
  beforeEach(async () => {
    await coll.insertMany(
      Array.from({ length: 30 }, (_, i) => ({ _id: i, n: i, even: i % 2 === 0, tags: i % 3 === 0 ? ['x', 'y'] : ['z'], sub: { v: 30 - i } })) as never[],
    );
  });

  it('filters, sorts, skips, limits and projects', async () => {
    const docs = await coll
      .find({ even: true, n: { $gte: 10 } }, { projection: { n: 1, _id: 0 } })
      .sort({ n: -1 })
      .skip(2)
      .limit(3)
      .toArray();
    expect(docs).toEqual([{ n: 24 }, { n: 22 }, { n: 20 }]);
    const excl = await coll.findOne({ _id: 3 as never }, { projection: { tags: 0, sub: 0 } });
    expect(excl).toEqual({ _id: 3, n: 3, even: false });
    const nested = await coll.findOne({ 'sub.v': 1 }, { projection: { 'sub.v': 1 } });
    expect(nested).toEqual({ _id: 29, sub: { v: 1 } });
  });

  it('supports the operators the job store uses', async () => {
    const ids = async (filter: Document) => (await coll.find(filter).sort({ _id: 1 }).toArray()).map((d) => d._id);
    expect(await ids({ $or: [{ n: { $lt: 2 } }, { n: { $in: [5, 7] } }] })).toEqual([0, 1, 5, 7]);
    expect(await ids({ n: { $lte: 3 }, even: { $ne: true } })).toEqual([1, 3]);
    expect(await ids({ missing: { $exists: false }, n: { $lt: 2 } })).toEqual([0, 1]);
    expect(await ids({ tags: { $elemMatch: { $eq: 'y' } }, n: { $lt: 7 } })).toEqual([0, 3, 6]);
    expect(await ids({ n: { $not: { $gte: 2 } } })).toEqual([0, 1]);
    expect(await ids({ tags: 'x', n: { $gt: 20 } })).toEqual([21, 24, 27]);
  });

  it('returns results in batches through getMore and closes cursors early with killCursors', async () => {
    const cursor = coll.find({}, { batchSize: 7 }).sort({ n: 1 });
    const seen: number[] = [];
    for await (const doc of cursor) seen.push(doc.n as number);
    expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => i));
    const early = coll.find({}, { batchSize: 5 });
    expect(await early.next()).not.toBeNull();
    await early.close();
    expect(early.killed).toBe(true);
  });

  it('fails a getMore on a killed cursor with CursorNotFound', async () => {
    const first = await t.db.command({ find: coll.collectionName, batchSize: 2 });
    const id = Long.fromValue((first.cursor as { id: number }).id);
    expect(id.isZero()).toBe(false);
    await t.db.command({ killCursors: coll.collectionName, cursors: [id] });
    const err = await error(t.db.command({ getMore: id, collection: coll.collectionName }));
    expect(err.code).toBe(43);
  });

  it('counts and lists distinct values', async () => {
    expect(await coll.countDocuments({ even: true })).toBe(15);
    expect(await coll.countDocuments({}, { skip: 25 })).toBe(5);
    expect(await coll.countDocuments({}, { limit: 4 })).toBe(4);
    expect(await coll.estimatedDocumentCount()).toBe(30);
    expect((await coll.distinct('tags')).sort()).toEqual(['x', 'y', 'z']);
    expect(await coll.distinct('even', { n: { $lt: 1 } })).toEqual([true]);
  });
});

describe('BSON comparison order', () => {
  it('sorts mixed types in MongoDB order and compares numbers across int, long and double', async () => {
    const oid = new ObjectId('65a000000000000000000000');
    await coll.insertMany([
      { _id: 1, v: 'b' },
      { _id: 2, v: new Date(0) },
      { _id: 3, v: true },
      { _id: 4, v: null },
      { _id: 5, v: new Long(10) },
      { _id: 6, v: new Double(9.5) },
      { _id: 7, v: oid },
      { _id: 8 },
      { _id: 9, v: { a: 1 } },
      { _id: 10, v: [0] },
      { _id: 11, v: new Int32(2) },
    ] as never[]);
    const order = (await coll.find({}).sort({ v: 1, _id: 1 }).toArray()).map((d) => d._id);
    // null and missing tie; arrays sort by their smallest element (0: a number).
    expect(order).toEqual([4, 8, 10, 11, 6, 5, 1, 9, 7, 3, 2]);
    const numbers = (
      await coll
        .find({ v: { $gte: 2, $lte: 10 } })
        .sort({ v: -1 })
        .toArray()
    ).map((d) => d._id);
    expect(numbers).toEqual([5, 6, 11]);
  });
});

describe('update', () => {
  beforeEach(async () => {
    await coll.insertMany([
      {
        _id: 1,
        n: 1,
        tags: ['a'],
        items: [
          { k: 'x', q: 1 },
          { k: 'y', q: 2 },
        ],
      },
      { _id: 2, n: 2, tags: [] },
      { _id: 3, n: 3, name: 'three' },
    ] as never[]);
  });

  it('applies operators to one or many and reports matched/modified counts', async () => {
    const one = await coll.updateOne({ n: { $gte: 2 } }, { $inc: { n: 10 }, $push: { tags: 'new' } as never });
    expect([one.matchedCount, one.modifiedCount]).toEqual([1, 1]);
    const many = await coll.updateMany({}, { $set: { seen: true } });
    expect([many.matchedCount, many.modifiedCount]).toEqual([3, 3]);
    const noop = await coll.updateMany({}, { $set: { seen: true } });
    expect([noop.matchedCount, noop.modifiedCount]).toEqual([3, 0]);
    const none = await coll.updateOne({ n: 999 }, { $set: { x: 1 } });
    expect([none.matchedCount, none.modifiedCount, none.upsertedId]).toEqual([0, 0, null]);
    expect(await coll.findOne({ _id: 2 as never })).toEqual({ _id: 2, n: 12, tags: ['new'], seen: true });
    await coll.updateOne({ _id: 3 as never }, { $unset: { name: '' }, $rename: { n: 'm' } });
    expect(await coll.findOne({ _id: 3 as never })).toEqual({ _id: 3, m: 3, seen: true });
  });

  it('upserts with equality fields from the filter and $setOnInsert only on insert', async () => {
    const up = await coll.updateOne({ key: 'k1', n: { $gt: 5 } }, { $set: { v: 1 }, $setOnInsert: { created: true } }, { upsert: true });
    expect(up.upsertedCount).toBe(1);
    expect(up.matchedCount).toBe(0);
    const doc = await coll.findOne({ _id: up.upsertedId as never });
    expect(doc).toEqual({ _id: up.upsertedId, key: 'k1', v: 1, created: true });
    const again = await coll.updateOne({ key: 'k1' }, { $set: { v: 2 }, $setOnInsert: { created: 'again' } }, { upsert: true });
    expect([again.matchedCount, again.modifiedCount, again.upsertedCount]).toEqual([1, 1, 0]);
    expect(await coll.findOne({ key: 'k1' }, { projection: { _id: 0 } })).toEqual({ key: 'k1', v: 2, created: true });
    const byId = await coll.updateOne({ _id: 77 as never }, { $set: { z: 1 } }, { upsert: true });
    expect(byId.upsertedId).toBe(77);
  });

  it('replaces documents, keeping _id, and upserts replacements', async () => {
    const r = await coll.replaceOne({ _id: 3 as never }, { fresh: true });
    expect(r.modifiedCount).toBe(1);
    expect(await coll.findOne({ _id: 3 as never })).toEqual({ _id: 3, fresh: true });
    const up = await coll.replaceOne({ _id: 9 as never }, { made: 1 }, { upsert: true });
    expect(up.upsertedId).toBe(9);
  });

  it('updates array elements with arrayFilters and the positional operator', async () => {
    await coll.updateOne({ _id: 1 as never }, { $set: { 'items.$[it].q': 50 } }, { arrayFilters: [{ 'it.k': 'y' }] });
    await coll.updateOne({ _id: 1 as never, 'items.k': 'x' }, { $inc: { 'items.$.q': 5 } });
    expect((await coll.findOne({ _id: 1 as never }))?.items).toEqual([
      { k: 'x', q: 6 },
      { k: 'y', q: 50 },
    ]);
  });

  it('applies the array operators workflow state uses', async () => {
    const oid1 = new ObjectId('65a000000000000000000001');
    const oid2 = new ObjectId('65a000000000000000000002');
    interface Workflow {
      _id: string;
      steps: { name: string; status: string; result?: number }[];
      ids: ObjectId[];
      log: number[];
      when: Date;
    }
    const wf = t.db.collection<Workflow>(coll.collectionName);
    await wf.insertOne({ _id: 'w', steps: [], ids: [oid1], log: [1, 2, 3], when: new Date(5000) });
    await wf.updateOne({ _id: 'w', 'steps.name': { $ne: 'a' } }, { $push: { steps: { name: 'a', status: 'pending' } } });
    await wf.updateOne({ _id: 'w', 'steps.name': { $ne: 'a' } }, { $push: { steps: { name: 'a', status: 'again' } } });
    await wf.updateOne(
      { _id: 'w' },
      {
        $push: {
          steps: {
            $each: [
              { name: 'b', status: 'pending' },
              { name: 'c', status: 'done' },
            ],
          },
        },
      },
    );
    const done = await wf.updateOne(
      { _id: 'w', steps: { $elemMatch: { name: 'b', status: 'pending' } } },
      { $set: { 'steps.$.status': 'done', 'steps.$.result': 42 } },
    );
    expect(done.modifiedCount).toBe(1);
    await wf.updateOne({ _id: 'w' }, { $pull: { steps: { status: 'pending' } }, $addToSet: { ids: { $each: [oid1, oid2] } } });
    await wf.updateOne({ _id: 'w' }, { $push: { log: { $each: [4, 5], $slice: -3 } }, $min: { when: new Date(1000) } });
    expect(await wf.findOne({ _id: 'w' })).toEqual({
      _id: 'w',
      steps: [
        { name: 'b', status: 'done', result: 42 },
        { name: 'c', status: 'done' },
      ],
      ids: [oid1, oid2],
      log: [3, 4, 5],
      when: new Date(1000),
    });
  });

  it('runs pipeline updates', async () => {
    await coll.updateOne({ _id: 3 as never }, [{ $set: { double: { $multiply: ['$n', 2] } } }, { $unset: 'name' }]);
    expect(await coll.findOne({ _id: 3 as never })).toEqual({ _id: 3, n: 3, double: 6 });
  });

  it('refuses invalid updates with MongoDB error codes and changes nothing', async () => {
    expect((await error(coll.updateOne({ _id: 3 as never }, { $inc: { name: 1 } }))).code).toBe(14);
    expect((await error(coll.updateOne({ _id: 3 as never }, { $set: { _id: 4 } }))).code).toBe(66);
    await coll.updateOne({ _id: 3 as never }, { $set: { _id: 3 } }); // same value: allowed
    expect((await error(coll.updateOne({ _id: 3 as never }, { $set: { n: 1 }, $inc: { n: 1 } }))).code).toBe(40);
    expect((await error(coll.updateOne({ _id: 3 as never }, { $frob: { n: 1 } } as never))).code).toBe(9);
    expect((await error(coll.updateOne({ _id: 3 as never }, { $push: { name: 1 } } as never))).code).toBe(2);
    expect(await coll.findOne({ _id: 3 as never })).toEqual({ _id: 3, n: 3, name: 'three' });
  });
});

describe('delete', () => {
  it('deletes one and many', async () => {
    await coll.insertMany([{ k: 1 }, { k: 1 }, { k: 2 }, { k: 3 }]);
    expect((await coll.deleteOne({ k: 1 })).deletedCount).toBe(1);
    expect((await coll.deleteMany({ k: { $in: [1, 2] } })).deletedCount).toBe(2);
    expect((await coll.deleteMany({ k: 99 })).deletedCount).toBe(0);
    expect(await coll.countDocuments()).toBe(1);
  });
});

describe('findOneAndUpdate / findOneAndDelete (a job claim)', () => {
  beforeEach(async () => {
    const now = new Date('2026-01-01T00:00:00Z').getTime();
    await coll.insertMany([
      { _id: 'a', status: 'queued', priority: 1, runAt: new Date(now - 1000) },
      { _id: 'b', status: 'queued', priority: 5, runAt: new Date(now - 500) },
      { _id: 'c', status: 'queued', priority: 5, runAt: new Date(now - 2000) },
      { _id: 'd', status: 'queued', priority: 9, runAt: new Date(now + 60_000) },
      { _id: 'e', status: 'running', priority: 9, runAt: new Date(now - 9000), leaseUntil: new Date(now - 1) },
      { _id: 'f', status: 'running', priority: 9, runAt: new Date(now - 9000), leaseUntil: new Date(now + 1000) },
    ] as never[]);
  });

  const now = new Date('2026-01-01T00:00:00Z');
  const claimFilter = {
    $or: [
      { status: { $in: ['queued'] }, runAt: { $lte: now } },
      { status: 'running', leaseUntil: { $lt: now } },
    ],
  };

  it('claims in priority, runAt, _id order and returns the updated document', async () => {
    const claimed: string[] = [];
    for (;;) {
      const doc = await coll.findOneAndUpdate(
        claimFilter,
        { $set: { status: 'running', leaseUntil: new Date(now.getTime() + 30_000), owner: 'w1' }, $inc: { attempts: 1 } },
        { sort: { priority: -1, runAt: 1, _id: 1 }, returnDocument: 'after' },
      );
      if (!doc) break;
      expect(doc.status).toBe('running');
      expect(doc.attempts).toBe(1);
      claimed.push(doc._id as unknown as string);
    }
    expect(claimed).toEqual(['e', 'c', 'b', 'a']);
  });

  it('returns the document before the update by default, with projection', async () => {
    const before = await coll.findOneAndUpdate({ _id: 'a' as never }, { $set: { status: 'done' } }, { projection: { status: 1 } });
    expect(before).toEqual({ _id: 'a', status: 'queued' });
    const meta = await coll.findOneAndUpdate(
      { _id: 'zz' as never },
      { $set: { v: 1 } },
      { upsert: true, returnDocument: 'after', includeResultMetadata: true },
    );
    expect(meta.value).toEqual({ _id: 'zz', v: 1 });
    expect(meta.lastErrorObject).toMatchObject({ n: 1, updatedExisting: false, upserted: 'zz' });
  });

  it('deletes and replaces through findAndModify', async () => {
    const removed = await coll.findOneAndDelete({ status: 'queued' }, { sort: { runAt: -1 } });
    expect(removed?._id).toBe('d');
    const replaced = await coll.findOneAndReplace({ _id: 'a' as never }, { only: true }, { returnDocument: 'after' });
    expect(replaced).toEqual({ _id: 'a', only: true });
    expect(await coll.findOneAndDelete({ _id: 'nope' as never })).toBeNull();
  });
});

describe('aggregate', () => {
  it('groups, sorts and counts (countDocuments uses this path)', async () => {
    await coll.insertMany([
      { q: 'a', s: 'done' },
      { q: 'a', s: 'queued' },
      { q: 'b', s: 'queued' },
      { q: 'a', s: 'queued' },
    ]);
    const groups = await coll.aggregate([{ $match: { s: 'queued' } }, { $group: { _id: '$q', n: { $sum: 1 } } }, { $sort: { _id: 1 } }]).toArray();
    expect(groups).toEqual([
      { _id: 'a', n: 2 },
      { _id: 'b', n: 1 },
    ]);
    const byStatus = await coll
      .aggregate([{ $group: { _id: { q: '$q', s: '$s' }, n: { $sum: 1 } } }, { $sort: { n: -1, '_id.q': 1 } }, { $limit: 1 }])
      .toArray();
    expect(byStatus).toEqual([{ _id: { q: 'a', s: 'queued' }, n: 2 }]);
  });

  it('counts a match with a constant group as mongod does: no group for no match, skip and limit first', async () => {
    await coll.insertMany(Array.from({ length: 7 }, (_, i) => ({ i, even: i % 2 === 0 })));
    const count = (pipeline: object[]) => coll.aggregate(pipeline).toArray();
    expect(await count([{ $match: { even: true } }, { $group: { _id: 1, n: { $sum: 1 } } }])).toEqual([{ _id: 1, n: 4 }]);
    expect(await count([{ $match: { even: true } }, { $group: { _id: null, total: { $sum: 1 } } }])).toEqual([{ _id: null, total: 4 }]);
    expect(await count([{ $match: { i: { $gt: 99 } } }, { $group: { _id: 1, n: { $sum: 1 } } }])).toEqual([]);
    expect(await count([{ $match: {} }, { $skip: 2 }, { $limit: 3 }, { $group: { _id: 1, n: { $sum: 1 } } }])).toEqual([{ _id: 1, n: 3 }]);
    expect(await count([{ $match: {} }, { $skip: 6 }, { $group: { _id: 1, n: { $sum: 1 } } }])).toEqual([{ _id: 1, n: 1 }]);
    // Shapes that only look like a count still compute what they say.
    expect(await count([{ $match: { even: true } }, { $group: { _id: 1, n: { $sum: 2 } } }])).toEqual([{ _id: 1, n: 8 }]);
    expect(await count([{ $match: { even: false } }, { $group: { _id: 1, n: { $sum: '$i' } } }])).toEqual([{ _id: 1, n: 9 }]);
    expect(await coll.countDocuments({ even: false }, { skip: 1, limit: 5 })).toBe(2);
  });
});

describe('bulkWrite', () => {
  it('reports per-operation counts and indexed writeErrors', async () => {
    await coll.insertOne({ _id: 1 as never, n: 0 });
    const result = await coll.bulkWrite([
      { insertOne: { document: { _id: 2, n: 0 } as never } },
      { updateOne: { filter: { _id: 1 }, update: { $inc: { n: 1 } } } },
      { updateMany: { filter: {}, update: { $set: { touched: true } } } },
      { deleteOne: { filter: { _id: 2 } } },
      { replaceOne: { filter: { _id: 3 }, replacement: { n: 3 }, upsert: true } },
    ] as never);
    expect(result.insertedCount).toBe(1);
    expect(result.matchedCount).toBe(3);
    expect(result.modifiedCount).toBe(3);
    expect(result.deletedCount).toBe(1);
    expect(result.upsertedCount).toBe(1);
    const err = (await coll
      .bulkWrite(
        [
          { insertOne: { document: { _id: 1 } } },
          { updateOne: { filter: { _id: 1 }, update: { $set: { after: true } } } },
          { insertOne: { document: { _id: 3 } } },
        ] as never,
        { ordered: false },
      )
      .catch((e: unknown) => e)) as MongoBulkWriteError;
    expect(err).toBeInstanceOf(MongoBulkWriteError);
    const errors = [err.writeErrors].flat();
    expect(errors.map((w) => [w.index, w.code])).toEqual([
      [0, 11000],
      [2, 11000],
    ]);
    expect(err.result.modifiedCount).toBe(1);
  });
});
