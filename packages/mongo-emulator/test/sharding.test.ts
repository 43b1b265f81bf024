import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MongoClient, type ChangeStreamInsertDocument, type Db, type Document, type IndexDescriptionInfo } from 'mongodb';
import { MongoEmulator, type ShardStatsReport } from '../src/index.js';
import { serverError } from './target.js';

/** A document of the config database's collections and databases, keyed by name. */
type ConfigDoc = Document & { _id: string };

// The sharded cluster simulation (`shards: N`): the emulator answers as a mongos in front of N
// virtual shards. Documents stay in its one store; what is checked is mongos's catalogue, its
// refusals on sharded collections and which shards each command would reach. These suites are
// about the emulator's own simulation, so they always run on it.

interface Cluster {
  emu: MongoEmulator;
  client: MongoClient;
  db: Db;
  admin: Db;
}

async function startCluster(options: { shards: number; version?: string }): Promise<Cluster> {
  const emu = await MongoEmulator.start({ port: 0, ttlIntervalMs: 0, ...options });
  const client = new MongoClient(emu.uri, { serverSelectionTimeoutMS: 5000 });
  await client.connect();
  return { emu, client, db: client.db('app'), admin: client.db('admin') };
}

async function stopCluster(c: Cluster | undefined): Promise<void> {
  await c?.client.close();
  await c?.emu.stop();
}

function nsStats(report: ShardStatsReport, ns: string): ShardStatsReport['namespaces'][number] {
  const found = report.namespaces.find((n) => n.ns === ns);
  if (!found) throw new Error(`no stats for ${ns}: ${JSON.stringify(report.namespaces.map((n) => n.ns))}`);
  return found;
}

describe('a sharded cluster of 4 virtual shards (7.0 rules)', () => {
  let c: Cluster;
  beforeAll(async () => {
    c = await startCluster({ shards: 4, version: '7.0' });
    await c.admin.command({ enableSharding: 'app' });
    // A hashed collection most tests use, with tenants t0..t199.
    await c.admin.command({ shardCollection: 'app.hashed', key: { tenant: 'hashed' } });
    await c.db.collection('hashed').insertMany(Array.from({ length: 200 }, (_, i) => ({ tenant: `t${i}` })));
  });
  afterAll(() => stopCluster(c));

  it('answers hello as a mongos and lists its shards', async () => {
    const hello = await c.admin.command({ hello: 1 });
    expect(hello.msg).toBe('isdbgrid');
    expect(hello.setName).toBeUndefined();
    expect(c.emu.uri).not.toContain('replicaSet');
    const { shards } = (await c.admin.command({ listShards: 1 })) as { shards: { _id: string }[] };
    expect(shards.map((s) => s._id)).toEqual(['shard0', 'shard1', 'shard2', 'shard3']);
  });

  it('shards a collection on a ranged key, visible in config.collections, config.chunks and listIndexes', async () => {
    const reply = await c.admin.command({ shardCollection: 'app.ranged', key: { queue: 1, partition: 1 } });
    expect(reply.collectionsharded).toBe('app.ranged');
    const config = c.client.db('config');
    const entry = await config.collection<ConfigDoc>('collections').findOne({ _id: 'app.ranged' });
    expect(entry?.key).toEqual({ queue: 1, partition: 1 });
    expect(entry?.unique).toBe(false);
    const chunks = await config.collection('chunks').find({ uuid: entry?.uuid }).toArray();
    expect(chunks).toHaveLength(1); // one chunk on the primary shard, as mongos starts a ranged key
    const db = await config.collection<ConfigDoc>('databases').findOne({ _id: 'app' });
    expect(chunks[0].shard).toBe(db?.primary);
    const indexes = (await c.db.collection('ranged').listIndexes().toArray()) as IndexDescriptionInfo[];
    expect(indexes.map((i) => i.key)).toContainEqual({ queue: 1, partition: 1 });
    // Sharding again with the same key is a no-op; another key is refused.
    await c.admin.command({ shardCollection: 'app.ranged', key: { queue: 1, partition: 1 } });
    expect((await serverError(c.admin.command({ shardCollection: 'app.ranged', key: { other: 1 } }))).code).toBe(23);
  });

  it('spreads a hashed key over every shard, in 2 chunks per shard', async () => {
    const entry = await c.client.db('config').collection<ConfigDoc>('collections').findOne({ _id: 'app.hashed' });
    const chunks = await c.client.db('config').collection('chunks').find({ uuid: entry?.uuid }).toArray();
    expect(chunks).toHaveLength(8);
    c.emu.resetShardStats();
    await c.db.collection('hashed').insertMany(Array.from({ length: 200 }, (_, i) => ({ tenant: `u${i}` })));
    const stats = nsStats(c.emu.shardStats(), 'app.hashed');
    expect(stats.targeted.insert).toBe(200);
    expect(stats.broadcast.insert).toBeUndefined();
    for (const shard of ['shard0', 'shard1', 'shard2', 'shard3']) expect(stats.shards[shard].targeted.insert).toBeGreaterThan(20);
  });

  it('refuses a unique index not prefixed by the shard key, accepts a prefixed one', async () => {
    await c.admin.command({ shardCollection: 'app.uniq', key: { queue: 1, partition: 1 } });
    const coll = c.db.collection('uniq');
    const refused = await serverError(coll.createIndex({ key: 1 }, { unique: true }));
    expect(refused.code).toBe(67);
    expect(refused.message).toContain('cannot create unique index over');
    await coll.createIndex({ queue: 1, partition: 1, key: 1 }, { unique: true });
    await coll.createIndex({ _id: 1, key: 1 }, { unique: true }); // _id first is allowed, as on mongod
    await coll.createIndex({ key: 1 }); // not unique: any key
  });

  it('refuses to shard a collection whose unique index does not start with the key', async () => {
    await c.db.collection('keyed').createIndex({ key: 1 }, { unique: true });
    const e = await serverError(c.admin.command({ shardCollection: 'app.keyed', key: { queue: 1 } }));
    expect(e.code).toBe(72);
    expect(e.message).toContain("Uniqueness can't be maintained");
  });

  it('refuses a hashed unique shard key', async () => {
    const e = await serverError(c.admin.command({ shardCollection: 'app.hu', key: { k: 'hashed' }, unique: true }));
    expect(e.code).toBe(72);
    expect(e.message).toContain('Hashed shard keys cannot be declared unique');
  });

  it('refuses a findAndModify without the shard key before 7.1, targets one shard with it', async () => {
    const coll = c.db.collection('hashed');
    const e = await serverError(coll.findOneAndUpdate({ state: 'ready' }, { $set: { state: 'running' } }));
    expect(e.code).toBe(61);
    expect(e.message).toBe('Query for sharded findAndModify must contain the shard key');
    c.emu.resetShardStats();
    const doc = await coll.findOneAndUpdate({ tenant: 't7' }, { $set: { state: 'running' } }, { returnDocument: 'after' });
    expect(doc?.state).toBe('running');
    const stats = nsStats(c.emu.shardStats(), 'app.hashed');
    expect(stats.targeted).toEqual({ findAndModify: 1 });
    expect(stats.broadcast).toEqual({});
  });

  it('refuses single updates and deletes without the shard key or an exact _id, before 7.1', async () => {
    const coll = c.db.collection('hashed');
    expect((await serverError(coll.updateOne({ state: 'running' }, { $set: { n: 1 } }))).code).toBe(61);
    expect((await serverError(coll.deleteOne({ state: 'running' }))).code).toBe(61);
    expect((await serverError(coll.updateOne({ other: 1 }, { $set: { n: 1 } }, { upsert: true }))).code).toBe(61);
    const one = await coll.findOne({ tenant: 't8' });
    c.emu.resetShardStats();
    await coll.updateOne({ _id: one?._id }, { $set: { n: 1 } }); // exact _id: broadcast, allowed
    await coll.updateMany({ state: 'running' }, { $set: { n: 2 } }); // multi: broadcast, allowed
    await coll.updateOne({ tenant: 't8' }, { $set: { n: 3 } });
    const stats = nsStats(c.emu.shardStats(), 'app.hashed');
    expect(stats.broadcast).toEqual({ update: 2 });
    expect(stats.targeted).toEqual({ update: 1 });
  });

  it('refuses an untargetable statement of a batch as its write error, the others run (ordered stops there)', async () => {
    const coll = c.db.collection('hashed');
    await coll.insertMany([{ tenant: 'batch-a' }, { tenant: 'batch-b' }]);
    c.emu.resetShardStats();
    const ordered = await coll
      .bulkWrite([
        { updateOne: { filter: { tenant: 'batch-a' }, update: { $set: { n: 1 } } } },
        { updateOne: { filter: { n: 1 }, update: { $set: { n: 2 } } } },
        { updateOne: { filter: { tenant: 'batch-b' }, update: { $set: { n: 1 } } } },
      ])
      .then(
        () => undefined,
        (e: unknown) => e as { writeErrors: { index: number; code: number }[] },
      );
    expect(ordered?.writeErrors.map((w) => [w.index, w.code])).toEqual([[1, 61]]);
    expect(await coll.countDocuments({ tenant: { $in: ['batch-a', 'batch-b'] }, n: 1 })).toBe(1); // batch-b not run
    const unordered = await coll.bulkWrite([{ deleteOne: { filter: { n: 1 } } }, { deleteOne: { filter: { tenant: 'batch-b' } } }], { ordered: false }).then(
      () => undefined,
      (e: unknown) => e as { writeErrors: { index: number; code: number }[] },
    );
    expect(unordered?.writeErrors.map((w) => [w.index, w.code])).toEqual([[0, 61]]);
    expect(await coll.countDocuments({ tenant: 'batch-b' })).toBe(0);
    expect(nsStats(c.emu.shardStats(), 'app.hashed').targeted).toMatchObject({ update: 1, delete: 1 });
  });

  it("refuses changing a document's shard key outside a transaction or retryable write", async () => {
    await c.db.collection('hashed').insertOne({ tenant: 'key-a' });
    const noRetry = new MongoClient(c.emu.uri, { retryWrites: false });
    await noRetry.connect();
    try {
      const coll = noRetry.db('app').collection('hashed');
      const e = await serverError(coll.updateOne({ tenant: 'key-a' }, { $set: { tenant: 'key-b' } }));
      // The driver rewraps any IllegalOperation (20) on a write as "does not support retryable
      // writes" (the MMAPv1 check), with mongod's error as originalError: as against a real mongos.
      const original = (e as unknown as { originalError: { code: number; message: string } }).originalError;
      expect(original.code).toBe(20);
      expect(original.message).toBe('Must run update to shard key field in a multi-statement transaction or with retryWrites: true.');
      expect(await coll.countDocuments({ tenant: 'key-a' })).toBe(1);
      expect((await serverError(coll.updateMany({ tenant: 'key-a' }, { $set: { tenant: 'key-b' } }))).code).toBe(72);
    } finally {
      await noRetry.close();
    }
    // A retryable write (the driver's default) may change it.
    await c.db.collection('hashed').updateOne({ tenant: 'key-a' }, { $set: { tenant: 'key-b' } });
    expect(await c.db.collection('hashed').countDocuments({ tenant: 'key-b' })).toBe(1);
  });

  it('targets ranges of a ranged key to the shards owning their chunks (split, moveChunk)', async () => {
    await c.admin.command({ shardCollection: 'app.spread', key: { queue: 1, partition: 1 } });
    for (let p = 1; p < 4; p++) await c.admin.command({ split: 'app.spread', middle: { queue: 'q', partition: p } });
    for (let p = 0; p < 4; p++) await c.admin.command({ moveChunk: 'app.spread', find: { queue: 'q', partition: p }, to: `shard${p}` });
    const coll = c.db.collection('spread');
    c.emu.resetShardStats();
    await coll.insertMany(Array.from({ length: 8 }, (_, i) => ({ queue: 'q', partition: i % 4 })));
    await coll.find({ queue: 'q', partition: 2 }).toArray();
    await coll.find({ queue: 'q', partition: { $gte: 2 } }).toArray();
    await coll.find({ queue: 'q' }).toArray();
    await coll.find({ other: 1 }).toArray();
    const stats = nsStats(c.emu.shardStats(), 'app.spread');
    expect(stats.targeted).toEqual({ insert: 8, find: 1 });
    expect(stats.broadcast).toEqual({ find: 3 });
    expect(stats.shards.shard2).toEqual({ targeted: { insert: 2, find: 1 }, broadcast: { find: 3 } });
    expect(stats.shards.shard0).toEqual({ targeted: { insert: 2 }, broadcast: { find: 2 } });
  });

  it('counts an unsharded collection on the primary shard, as targeted', async () => {
    c.emu.resetShardStats();
    await c.db.collection('plain').insertOne({ a: 1 });
    await c.db.collection('plain').findOne({ a: 1 });
    const { primary } = (await c.client.db('config').collection<ConfigDoc>('databases').findOne({ _id: 'app' })) as Document;
    const stats = nsStats(c.emu.shardStats(), 'app.plain');
    expect(stats.sharded).toBe(false);
    expect(stats.targeted).toEqual({ insert: 1, find: 1 });
    expect(Object.keys(stats.shards)).toEqual([primary]);
  });

  it('reads and resets the counts with the loomShardStats admin command', async () => {
    await c.db.collection('hashed').findOne({ tenant: 't1' });
    const before = (await c.admin.command({ loomShardStats: 1, reset: true })) as ShardStatsReport;
    expect(before.shards).toEqual(['shard0', 'shard1', 'shard2', 'shard3']);
    expect(before.totals.targeted).toBeGreaterThan(0);
    expect(nsStats(before, 'app.hashed').targeted.find).toBe(1);
    const after = await c.admin.command({ loomShardStats: 1 });
    expect(after.namespaces).toEqual([]);
    expect(after.totals).toEqual({ targeted: 0, broadcast: 0 });
  });

  it('keeps transactions working on a sharded collection', async () => {
    const coll = c.db.collection('hashed');
    const session = c.client.startSession();
    try {
      await session.withTransaction(async () => {
        await coll.insertOne({ tenant: 'txn-a', v: 1 }, { session });
        await coll.updateOne({ tenant: 'txn-a' }, { $set: { tenant: 'txn-b' } }, { session }); // shard key change: allowed in a transaction
      });
    } finally {
      await session.endSession();
    }
    expect(await coll.findOne({ tenant: 'txn-b' }, { projection: { _id: 0 } })).toEqual({ tenant: 'txn-b', v: 1 });
  });

  it('keeps change streams working on a sharded collection, counted as broadcast', async () => {
    const coll = c.db.collection('hashed');
    c.emu.resetShardStats();
    const stream = coll.watch();
    try {
      await stream.tryNext(); // opens the cursor
      await coll.insertOne({ tenant: 'watched' });
      const event = await stream.next();
      expect(event.operationType).toBe('insert');
      expect((event as ChangeStreamInsertDocument).fullDocument.tenant).toBe('watched');
    } finally {
      await stream.close();
    }
    expect(nsStats(c.emu.shardStats(), 'app.hashed').broadcast.aggregate).toBe(1);
  });

  it("forgets a collection's sharding when it is dropped, and a database's when it is dropped", async () => {
    await c.admin.command({ shardCollection: 'gone.a', key: { k: 1 } });
    await c.admin.command({ shardCollection: 'gone.b', key: { k: 1 } });
    const configColls = c.client.db('config').collection<ConfigDoc>('collections');
    await c.client.db('gone').collection('a').drop();
    expect(await configColls.countDocuments({ _id: 'gone.a' })).toBe(0);
    expect(await configColls.countDocuments({ _id: 'gone.b' })).toBe(1);
    await c.client.db('gone').dropDatabase();
    expect(await configColls.countDocuments({ _id: 'gone.b' })).toBe(0);
    expect(await c.client.db('config').collection<ConfigDoc>('databases').countDocuments({ _id: 'gone' })).toBe(0);
    // Unsharded again: a single write without a shard key is fine.
    await c.client
      .db('gone')
      .collection('b')
      .updateOne({ other: 1 }, { $set: { x: 1 } });
  });

  it('is not a replica set command: enableSharding is unknown without shards', async () => {
    const plain = await MongoEmulator.start({ port: 0, ttlIntervalMs: 0 });
    const client = new MongoClient(plain.uri);
    try {
      await client.connect();
      expect((await serverError(client.db('admin').command({ enableSharding: 'app' }))).code).toBe(59);
      expect((await client.db('admin').command({ hello: 1 })).msg).toBeUndefined();
      expect(() => plain.shardStats()).toThrow(/shards: N/);
    } finally {
      await client.close();
      await plain.stop();
    }
  });
});

describe('a sharded cluster emulating 8.0 (writes without shard key)', () => {
  let c: Cluster;
  beforeAll(async () => {
    c = await startCluster({ shards: 3, version: '8.0' });
    await c.admin.command({ shardCollection: 'app.jobs', key: { tenant: 'hashed' } });
    await c.db.collection('jobs').insertMany(Array.from({ length: 30 }, (_, i) => ({ tenant: `t${i}`, state: 'ready' })));
  });
  afterAll(() => stopCluster(c));

  it('accepts a findAndModify without the shard key and counts it broadcast', async () => {
    c.emu.resetShardStats();
    const doc = await c.db.collection('jobs').findOneAndUpdate({ state: 'ready' }, { $set: { state: 'running' } }, { returnDocument: 'after' });
    expect(doc?.state).toBe('running');
    await c.db.collection('jobs').findOneAndUpdate({ tenant: 't3' }, { $set: { seen: true } });
    const stats = nsStats(c.emu.shardStats(), 'app.jobs');
    expect(stats.broadcast).toEqual({ findAndModify: 1 });
    expect(stats.targeted).toEqual({ findAndModify: 1 });
    for (const shard of ['shard0', 'shard1', 'shard2']) expect(stats.shards[shard].broadcast.findAndModify).toBe(1);
  });

  it('accepts updateOne and deleteOne without the shard key, counted broadcast', async () => {
    c.emu.resetShardStats();
    await c.db.collection('jobs').updateOne({ state: 'ready' }, { $set: { state: 'x' } });
    await c.db.collection('jobs').deleteOne({ state: 'x' });
    expect(nsStats(c.emu.shardStats(), 'app.jobs').broadcast).toEqual({ update: 1, delete: 1 });
  });
});
