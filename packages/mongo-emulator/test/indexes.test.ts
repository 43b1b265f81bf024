import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { type Collection, type Document, type IndexDescriptionInfo } from 'mongodb';
import { freshCollectionEachTest, ManualClock, openTarget, type Target, serverError as error } from './target.js';

/** The indexes of `c` (the driver types a listIndexes cursor's documents as `any`). */
async function indexesOf(c: Collection<Document>): Promise<IndexDescriptionInfo[]> {
  return (await c.listIndexes().toArray()) as IndexDescriptionInfo[];
}

let t: Target;
let coll: Collection<Document>;
freshCollectionEachTest('idx', (target, fresh) => {
  t = target;
  coll = fresh;
});

describe('createIndexes / listIndexes / dropIndexes', () => {
  it('creates indexes with their options and lists them', async () => {
    const names = await coll.createIndexes([
      { key: { email: 1 }, unique: true },
      { key: { status: 1, priority: -1, runAt: 1, _id: 1 }, name: 'claim' },
      { key: { nick: 1 }, sparse: true },
      { key: { key: 1 }, unique: true, partialFilterExpression: { key: { $exists: true } } },
      { key: { expiresAt: 1 }, expireAfterSeconds: 3600, partialFilterExpression: { status: 'done' } },
    ]);
    expect(names).toEqual(['email_1', 'claim', 'nick_1', 'key_1', 'expiresAt_1']);
    const listed = await indexesOf(coll);
    const byName = Object.fromEntries(listed.map((i) => [i.name!, i] as const));
    expect(byName._id_.key).toEqual({ _id: 1 });
    expect(byName.email_1).toMatchObject({ key: { email: 1 }, unique: true });
    expect(byName.claim.key).toEqual({ status: 1, priority: -1, runAt: 1, _id: 1 });
    expect(byName.nick_1.sparse).toBe(true);
    expect(byName.key_1.partialFilterExpression).toEqual({ key: { $exists: true } });
    expect(byName.expiresAt_1.expireAfterSeconds).toBe(3600);
    expect(await coll.indexExists('claim')).toBe(true);
  });

  it('accepts an identical index again and reports conflicts with codes 85 and 86', async () => {
    await coll.createIndex({ a: 1 }, { name: 'a_idx' });
    expect(await coll.createIndex({ a: 1 }, { name: 'a_idx' })).toBe('a_idx');
    const sameNameOtherKey = await error(coll.createIndex({ b: 1 }, { name: 'a_idx' }));
    expect([sameNameOtherKey.code, sameNameOtherKey.codeName]).toEqual([86, 'IndexKeySpecsConflict']);
    const sameKeyOtherName = await error(coll.createIndex({ a: 1 }, { name: 'other' }));
    expect([sameKeyOtherName.code, sameKeyOtherName.codeName]).toEqual([85, 'IndexOptionsConflict']);
    const sameNameOtherOptions = await error(coll.createIndex({ a: 1 }, { name: 'a_idx', unique: true }));
    expect(sameNameOtherOptions.code).toBe(85);
  });

  it('drops indexes by name and reports unknown ones with IndexNotFound', async () => {
    await coll.createIndex({ a: 1 });
    await coll.createIndex({ b: 1 });
    await coll.dropIndex('a_1');
    expect((await indexesOf(coll)).map((i) => i.name).sort()).toEqual(['_id_', 'b_1']);
    expect((await error(coll.dropIndex('a_1'))).code).toBe(27);
    await coll.dropIndexes();
    expect((await indexesOf(coll)).map((i) => i.name)).toEqual(['_id_']);
  });

  it('changes a TTL in place with collMod and reports old and new values', async () => {
    await coll.createIndex({ finishedAt: 1 }, { name: 'retention', expireAfterSeconds: 60 });
    await coll.createIndex({ a: 1, b: 1 });
    const reply = await t.db.command({ collMod: coll.collectionName, index: { name: 'retention', expireAfterSeconds: 3600 } });
    expect(reply).toMatchObject({ expireAfterSeconds_old: 60, expireAfterSeconds_new: 3600, ok: 1 });
    const listed = await indexesOf(coll);
    expect(listed.find((i) => i.name === 'retention')?.expireAfterSeconds).toBe(3600);
    const compound = await error(t.db.command({ collMod: coll.collectionName, index: { keyPattern: { a: 1, b: 1 }, expireAfterSeconds: 5 } }));
    expect(compound.message).toMatch(/TTL|expireAfterSeconds/);
    expect((await indexesOf(coll)).find((i) => i.name === 'a_1_b_1')?.expireAfterSeconds).toBeUndefined();
    const missing = await error(t.db.command({ collMod: coll.collectionName, index: { name: 'nope', expireAfterSeconds: 5 } }));
    expect(missing.code).toBe(27);
  });

  it('reports listIndexes on a missing collection as NamespaceNotFound', async () => {
    expect((await error(indexesOf(coll))).code).toBe(26);
  });
});

describe('unique indexes', () => {
  it('rejects duplicates with the E11000 shape, keyPattern and keyValue, changing nothing', async () => {
    await coll.createIndex({ email: 1 }, { unique: true });
    await coll.insertOne({ _id: 1 as never, email: 'a@b.c' });
    const err = await error(coll.insertOne({ _id: 2 as never, email: 'a@b.c' }));
    expect(err.code).toBe(11000);
    expect(err.message).toBe(`E11000 duplicate key error collection: ${coll.namespace} index: email_1 dup key: { email: "a@b.c" }`);
    expect(err.keyPattern).toEqual({ email: 1 });
    expect(err.keyValue).toEqual({ email: 'a@b.c' });
    await coll.insertOne({ _id: 3 as never, email: 'x@y.z' });
    const upd = await error(coll.updateOne({ _id: 3 as never }, { $set: { email: 'a@b.c', other: 1 } }));
    expect(upd.code).toBe(11000);
    expect(await coll.findOne({ _id: 3 as never })).toEqual({ _id: 3, email: 'x@y.z' });
    const fam = await error(coll.findOneAndUpdate({ _id: 3 as never }, { $set: { email: 'a@b.c' } }));
    expect(fam.code).toBe(11000);
    expect(fam.keyValue).toEqual({ email: 'a@b.c' });
    expect(await coll.countDocuments()).toBe(2);
  });

  it('enforces compound uniqueness on the whole key, treating missing as null', async () => {
    await coll.createIndex({ q: 1, k: 1 }, { unique: true });
    await coll.insertMany([{ q: 'a', k: 1 }, { q: 'a', k: 2 }, { q: 'b', k: 1 }, { q: 'c' }]);
    const err = await error(coll.insertOne({ q: 'c', k: null }));
    expect(err.message).toContain('dup key: { q: "c", k: null }');
    expect(err.keyPattern).toEqual({ q: 1, k: 1 });
  });

  it('lets sparse and partial unique indexes ignore documents they do not cover', async () => {
    await coll.createIndex({ nick: 1 }, { unique: true, sparse: true });
    await coll.createIndex({ key: 1 }, { unique: true, partialFilterExpression: { key: { $type: 'string' } } });
    await coll.insertMany([{}, {}, { nick: 'x' }, { key: 5 }, { key: 5 }, { key: 'k' }]);
    expect((await error(coll.insertOne({ nick: 'x' }))).code).toBe(11000);
    expect((await error(coll.insertOne({ key: 'k' }))).code).toBe(11000);
    expect(await coll.countDocuments()).toBe(6);
  });

  it('refuses to build a unique index over existing duplicates', async () => {
    await coll.insertMany([{ v: 1 }, { v: 1 }]);
    expect((await error(coll.createIndex({ v: 1 }, { unique: true }))).code).toBe(11000);
    expect((await indexesOf(coll)).map((i) => i.name)).toEqual(['_id_']);
  });

  it('checks every statement of an unordered batch against the index', async () => {
    await coll.createIndex({ idem: 1 }, { unique: true, partialFilterExpression: { idem: { $exists: true } } });
    const result = await coll
      .insertMany([{ idem: 'k1' }, { idem: 'k2' }, { idem: 'k1' }, { plain: true }, { plain: true }], { ordered: false })
      .catch((e: { writeErrors?: unknown; insertedCount?: number }) => e);
    expect((result as { insertedCount: number }).insertedCount).toBe(4);
    expect(await coll.countDocuments({ idem: 'k1' })).toBe(1);
  });
});

describe('queries through indexes', () => {
  it('returns the same answers through a compound index as without one', async () => {
    const docs = Array.from({ length: 200 }, (_, i) => ({
      _id: i,
      status: ['queued', 'running', 'done'][i % 3],
      priority: i % 5,
      runAt: new Date(1_000_000 + ((i * 7919) % 200) * 1000),
      tags: i % 4 === 0 ? ['x'] : [],
    }));
    await coll.insertMany(docs as never[]);
    const filter = {
      $or: [
        { status: 'queued', runAt: { $lte: new Date(1_100_000) } },
        { status: 'running', runAt: { $lt: new Date(1_050_000) } },
      ],
      tags: { $not: { $elemMatch: { $eq: 'nope' } } },
    };
    const sort = { priority: -1, runAt: 1, _id: 1 } as const;
    const before = await coll.find(filter).sort(sort).toArray();
    await coll.createIndex({ status: 1, priority: -1, runAt: 1, _id: 1 });
    const after = await coll.find(filter).sort(sort).toArray();
    expect(after.map((d) => d._id)).toEqual(before.map((d) => d._id));
    expect(after.length).toBeGreaterThan(10);
    const firstBatch = await coll
      .find({ status: { $in: ['queued', 'done'] } })
      .sort(sort)
      .limit(5)
      .toArray();
    const reference = docs
      .filter((d) => d.status !== 'running')
      .sort((a, b) => b.priority - a.priority || a.runAt.getTime() - b.runAt.getTime() || a._id - b._id)
      .slice(0, 5);
    expect(firstBatch.map((d) => d._id)).toEqual(reference.map((d) => d._id));
  });
});

describe('index scans agree with collection scans', () => {
  it('gives identical answers for random filters and sorts over mixed data', async () => {
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const pick = <T>(xs: T[]): T => xs[rand(xs.length)];
    const docs = Array.from({ length: 300 }, (_, i) => {
      const doc: Document = { _id: i };
      const a = rand(7);
      if (a < 5) doc.a = a;
      else if (a === 5) doc.a = null;
      doc.b = rand(5) === 0 ? [pick(['x', 'y']), pick(['y', 'z'])] : pick(['x', 'y', 'z']);
      doc.c = new Date(1_000_000 + rand(50) * 1000);
      doc.d = rand(3) === 0 ? rand(10) + 0.5 : rand(10);
      return doc;
    });
    const plain = t.db.collection(`${coll.collectionName}_plain`);
    await coll.insertMany(docs);
    await plain.insertMany(docs.map((d) => ({ ...d })));
    await coll.createIndex({ a: 1, d: -1, c: 1 });
    await coll.createIndex({ b: 1, a: -1 });
    await coll.createIndex({ c: -1, _id: 1 });
    const conditions: (() => Document)[] = [
      () => ({ a: rand(5) }),
      () => ({ a: { $in: [rand(5), rand(5), null] } }),
      () => ({ a: { $gte: rand(5) } }),
      () => ({ d: { $gt: rand(10), $lte: rand(10) + 3 } }),
      () => ({ c: { $lt: new Date(1_000_000 + rand(50) * 1000) } }),
      () => ({ b: pick(['x', 'y', 'z']) }),
      () => ({ b: { $in: ['x', 'z'] }, a: { $lt: 3 } }),
      () => ({ $or: [{ a: rand(5), d: { $lt: 5 } }, { c: { $gte: new Date(1_000_000 + rand(50) * 1000) } }] }),
      () => ({ a: { $exists: false } }),
    ];
    const sorts: Document[] = [{}, { d: -1, _id: 1 }, { a: 1, d: -1, c: 1, _id: 1 }, { c: -1, _id: 1 }, { b: 1, _id: -1 }, { a: -1, _id: 1 }];
    for (let q = 0; q < 60; q++) {
      const filter = { ...pick(conditions)(), ...(rand(2) ? pick(conditions)() : {}) };
      const sort = pick(sorts);
      const limit = pick([0, 1, 5]);
      const run = (c: Collection<Document>) => {
        let cursor = c.find(filter).sort(Object.hasOwn(sort, '_id') ? sort : { ...sort, _id: 1 });
        if (limit) cursor = cursor.limit(limit);
        return cursor.toArray();
      };
      const [indexed, scanned] = await Promise.all([run(coll), run(plain)]);
      expect({ filter, sort, ids: indexed.map((d) => d._id) }).toEqual({ filter, sort, ids: scanned.map((d) => d._id) });
    }
  });
});

describe('hints', () => {
  it('answers through a hinted index by name or key pattern and rejects unknown hints', async () => {
    await coll.insertMany(Array.from({ length: 20 }, (_, i) => ({ _id: i, q: i % 2 ? 'a' : 'b', p: i % 5 })) as never[]);
    await coll.createIndex({ q: 1, p: -1, _id: 1 }, { name: 'qp' });
    const expected = (await coll.find({ q: 'a' }).sort({ p: -1, _id: 1 }).toArray()).map((d) => d._id);
    expect((await coll.find({ q: 'a' }).sort({ p: -1, _id: 1 }).hint('qp').toArray()).map((d) => d._id)).toEqual(expected);
    expect((await coll.find({ q: 'a' }).sort({ p: -1, _id: 1 }).hint({ q: 1, p: -1, _id: 1 }).toArray()).map((d) => d._id)).toEqual(expected);
    const claimed = await coll.findOneAndUpdate(
      { q: 'a' },
      { $set: { taken: true } },
      { sort: { p: -1, _id: 1 }, hint: { q: 1, p: -1, _id: 1 }, returnDocument: 'after' },
    );
    expect(claimed?._id).toBe(expected[0]);
    expect(await coll.countDocuments({ q: 'b' }, { hint: 'qp' })).toBe(10);
    const err = await error(coll.find({ q: 'a' }).hint('nope').toArray());
    expect(err.code).toBe(2);
    expect(err.message).toContain('hint provided does not correspond to an existing index');
  });
});

describe('explain', () => {
  it('reports the documents a find fetched (totalDocsExamined) and returned', async () => {
    await coll.createIndex({ q: 1, p: -1 }, { name: 'qp' });
    await coll.insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: i as never, q: i % 2 === 0 ? 'a' : 'b', p: i, x: i })));
    const indexed = await coll.find({ q: 'b' }).sort({ p: -1 }).limit(5).hint('qp').explain('executionStats');
    expect(indexed.executionStats).toMatchObject({ nReturned: 5, totalDocsExamined: 5 });
    const scan = await coll.find({ x: { $gte: 150 } }).explain('executionStats');
    expect(scan.executionStats).toMatchObject({ nReturned: 50, totalDocsExamined: 200 });
    expect((await coll.find({ q: 'a' }).explain('queryPlanner')).executionStats).toBeUndefined();
  });
});

describe('index use and TTL (the emulator itself, in every environment)', () => {
  let t: Target;
  let coll: Collection<Document>;
  let n = 0;
  beforeAll(async () => {
    t = await openTarget({ emulator: true });
  });
  afterAll(async () => {
    await t.close();
  });
  beforeEach(() => {
    coll = t.db.collection(`idx_emulator_${++n}`);
  });

  it("uses a partial claim index when the query implies its filter (the job store's claim)", async () => {
    await coll.createIndex(
      { queue: 1, priority: -1, runAt: 1, _id: 1, claimAt: 1 },
      { name: 'loom_claim', partialFilterExpression: { claimAt: { $exists: true } } },
    );
    await coll.createIndex({ idempotencyKey: 1 }, { name: 'idem', unique: true, partialFilterExpression: { idempotencyKey: { $type: 'string' } } });
    const claim = { claimAt: { $lte: new Date() }, queue: { $in: ['default', 'mail'] }, name: { $in: ['a', 'b'] }, status: { $in: ['queued', 'running'] } };
    expect(t.emulator!.explainPlan(t.db.databaseName, coll.collectionName, claim, { priority: -1, runAt: 1, _id: 1 })).toBe('loom_claim');
    expect(t.emulator!.explainPlan(t.db.databaseName, coll.collectionName, { idempotencyKey: 'k1' })).toBe('idem');
    // Without the implying condition the partial index could miss documents: not used.
    expect(t.emulator!.explainPlan(t.db.databaseName, coll.collectionName, { queue: 'default' })).toBe('COLLSCAN');
  });

  it('answers the claim shape from the compound index, not a collection scan', async () => {
    await coll.createIndex({ status: 1, priority: -1, runAt: 1, _id: 1 });
    const plan = t.emulator!.explainPlan(
      t.db.databaseName,
      coll.collectionName,
      { status: 'queued', runAt: { $lte: new Date() } },
      { priority: -1, runAt: 1, _id: 1 },
    );
    expect(plan).toBe('status_1_priority_-1_runAt_1__id_1');
    const orPlan = t.emulator!.explainPlan(
      t.db.databaseName,
      coll.collectionName,
      {
        $or: [
          { status: 'queued', runAt: { $lte: new Date() } },
          { status: 'running', leaseUntil: { $lt: new Date() } },
        ],
      },
      { priority: -1, runAt: 1, _id: 1 },
    );
    expect(orPlan).toBe('OR(status_1_priority_-1_runAt_1__id_1,status_1_priority_-1_runAt_1__id_1)');
    expect(t.emulator!.explainPlan(t.db.databaseName, coll.collectionName, { other: 1 })).toBe('COLLSCAN');
  });

  it('expires documents by the emulator clock, honouring a partial filter', async () => {
    const clock = new ManualClock();
    const own = await openTarget({ clock, emulator: true });
    try {
      const c = own.db.collection('ttl');
      await c.createIndex({ finishedAt: 1 }, { expireAfterSeconds: 60, partialFilterExpression: { status: 'done' } });
      const base = clock.now().getTime();
      await c.insertMany([
        { _id: 1, status: 'done', finishedAt: new Date(base) },
        { _id: 2, status: 'done', finishedAt: new Date(base + 30_000) },
        { _id: 3, status: 'failed', finishedAt: new Date(base) },
        { _id: 4, status: 'done', finishedAt: 'not a date' },
      ] as never[]);
      clock.advance(59_000);
      expect(own.emulator!.runTtlSweep()).toBe(0);
      clock.advance(1_000);
      expect(own.emulator!.runTtlSweep()).toBe(1);
      expect((await c.find().sort({ _id: 1 }).toArray()).map((d) => d._id)).toEqual([2, 3, 4]);
      clock.advance(30_000);
      own.emulator!.runTtlSweep();
      expect((await c.find().sort({ _id: 1 }).toArray()).map((d) => d._id)).toEqual([3, 4]);
    } finally {
      await own.close();
    }
  });
});
