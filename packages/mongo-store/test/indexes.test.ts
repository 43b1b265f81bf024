import { describe, expect, it } from '@jest/globals';
import type { Collection, IndexDescriptionInfo, MongoClient } from 'mongodb';
import { LoomError } from '@loom/core';
import { CaptureLogger } from '@loom/testing';
import { indexPlan } from '../src/index.js';
import { useMongoFixture } from './fixture.js';

const fixture = useMongoFixture();

/** The indexes of `collection` (the driver types a listIndexes cursor's documents as `any`). */
async function indexesOf(collection: Collection): Promise<IndexDescriptionInfo[]> {
  return (await collection.listIndexes().toArray()) as IndexDescriptionInfo[];
}

async function indexNames(store: { client: MongoClient }, database: string, collection: string) {
  return (await indexesOf(store.client.db(database).collection(collection))).map((ix) => ix.name!).sort();
}

async function initError(store: { init(): Promise<void> }): Promise<LoomError> {
  try {
    await store.init();
  } catch (err) {
    if (LoomError.is(err)) return err;
    throw err;
  }
  throw new Error('init() succeeded, expected a startup error');
}

describe('MongoStore indexes', () => {
  it('creates every planned index, and init() again (even from a second store) changes nothing', async () => {
    const database = fixture.mongo.newDatabaseName('ix');
    const first = fixture.newStore({ database });
    await first.init();
    const plan = indexPlan({ retentionSeconds: { completed: 7 * 86_400, dead: false } });
    const jobs = await indexNames(first, database, 'loom_jobs');
    expect(jobs).toEqual(['_id_', ...plan.jobs.map((ix) => ix.name)].sort());
    expect(await indexNames(first, database, 'loom_dead_letters')).toEqual(['_id_', ...plan.deadLetters.map((ix) => ix.name)].sort());

    await first.init();
    const second = fixture.newStore({ database });
    await second.init();
    expect(await indexNames(second, database, 'loom_jobs')).toEqual(jobs);
    await Promise.all([first.close(), second.close()]);
  });

  it('starts on a database Loom has run on with one hello and one listing per collection, writing nothing', async () => {
    const database = fixture.mongo.newDatabaseName('ix');
    const first = fixture.newStore({ database });
    await first.init();
    const restart = fixture.newStore({ database, url: fixture.mongo.uri, client: undefined, clientOptions: { monitorCommands: true } });
    const sent: { name: string; target: unknown }[] = [];
    restart.client.on('commandStarted', (e) => sent.push({ name: e.commandName, target: e.command[e.commandName] }));
    try {
      await restart.init();
      const listed = sent.filter((c) => c.name === 'listIndexes').map((c) => c.target);
      expect(listed).toEqual(expect.arrayContaining(['loom_jobs', 'loom_dead_letters']));
      expect(new Set(listed).size).toBe(listed.length); // each collection's listing is its verification
      expect(sent.filter((c) => ['createIndexes', 'dropIndexes', 'collMod', 'create'].includes(c.name))).toEqual([]);
      // The deployment's kind and the sharding check share one hello: each more is a round trip of every start.
      expect(sent.filter((c) => c.name === 'hello')).toHaveLength(1);
    } finally {
      await Promise.all([first.close(), restart.close()]);
    }
  });

  it('lets several processes initialise one fresh database at once', async () => {
    const database = fixture.mongo.newDatabaseName('ix');
    const stores = [0, 1, 2].map(() => fixture.newStore({ database, url: fixture.mongo.uri, client: undefined }));
    try {
      await Promise.all(stores.map((s) => s.init()));
      expect(await indexNames(stores[0], database, 'loom_jobs')).toContain('loom_claim');
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it("refuses to start when an index has Loom's name but other options, naming it", async () => {
    const database = fixture.mongo.newDatabaseName('ix');
    // A non-unique index under the idempotency index's name would silently allow duplicate jobs.
    await fixture.mongo.client.db(database).collection('loom_jobs').createIndex({ idempotencyKey: 1 }, { name: 'loom_idempotency_key' });
    const err = await initError(fixture.newStore({ database }));
    expect(err.code).toBe('STORE_ERROR');
    expect(err.message).toContain('"loom_idempotency_key"');
    expect(err.message).toContain('loom_jobs');
    expect(err.message).toContain('unique false instead of true');
  });

  it("refuses to start when Loom's keys are indexed under another name, naming that index", async () => {
    const database = fixture.mongo.newDatabaseName('ix');
    await fixture.mongo.client.db(database).collection('loom_jobs').createIndex({ parentId: 1, status: 1, _id: 1 }, { name: 'by_parent' });
    const err = await initError(fixture.newStore({ database }));
    expect(err.message).toContain('"by_parent"');
    expect(err.message).toContain('"loom_parent"');
  });

  it('replaces the parent index of Loom 0.1.0 ({ parentId }) with { parentId, status, _id }', async () => {
    const database = fixture.mongo.newDatabaseName('ix');
    const jobs = fixture.mongo.client.db(database).collection('loom_jobs');
    await jobs.createIndex({ parentId: 1 }, { name: 'loom_parent', partialFilterExpression: { parentId: { $type: 'string' } } });
    const stores = [0, 1].map(() => fixture.newStore({ database }));
    await Promise.all(stores.map((s) => s.init())); // two processes upgrading at once
    const parent = (await indexesOf(jobs)).find((ix) => ix.name === 'loom_parent');
    expect(parent?.key).toEqual({ parentId: 1, status: 1, _id: 1 });
    await Promise.all(stores.map((s) => s.close()));
  });

  it("replaces Loom 0.1.0's claim index (without name), saying so, and claims use the new one", async () => {
    const database = fixture.mongo.newDatabaseName('ix');
    const jobs = fixture.mongo.client.db(database).collection('loom_jobs');
    await jobs.createIndex(
      { queue: 1, priority: -1, runAt: 1, _id: 1, claimAt: 1 },
      { name: 'loom_claim', partialFilterExpression: { claimAt: { $exists: true } } },
    );
    const logger = new CaptureLogger();
    const store = fixture.newStore({ database, logger });
    await store.init();
    const claimIndex = (await indexesOf(jobs)).find((ix) => ix.name === 'loom_claim');
    expect(claimIndex?.key).toEqual({ queue: 1, name: 1, priority: -1, runAt: 1, _id: 1, claimAt: 1 });
    expect(logger.at('warn')).toEqual([
      expect.objectContaining({ msg: expect.stringContaining('earlier Loom version'), fields: expect.objectContaining({ index: 'loom_claim' }) }),
    ]);
    await store.enqueue([{ name: 'send', queue: 'default', payload: {}, priority: 0, runAt: new Date(0), maxAttempts: 1 }], { now: new Date(0) });
    expect(await store.claim({ owner: 'w', queues: ['default'], names: ['send'], limit: 1, leaseUntil: new Date(60_000), now: new Date(1) })).toHaveLength(1);
    await store.close();
  });

  it('makes claims fail loudly, not scan silently, when the claim index was dropped', async () => {
    const database = fixture.mongo.newDatabaseName('ix');
    const store = fixture.newStore({ database });
    await store.init();
    await store.enqueue([{ name: 'send', queue: 'default', payload: {}, priority: 0, runAt: new Date(0), maxAttempts: 1 }], { now: new Date(0) });
    await fixture.mongo.client.db(database).collection('loom_jobs').dropIndex('loom_claim');
    const claim = { owner: 'w', queues: ['default'], names: ['send'], leaseUntil: new Date(60_000), now: new Date(1) };
    await expect(store.claim({ ...claim, limit: 1 })).rejects.toThrow(/hint/);
    await expect(store.claim({ ...claim, limit: 5 })).rejects.toThrow(/hint/);
    await fixture.newStore({ database }).init(); // a restart recreates it
    expect(await store.claim({ ...claim, limit: 1 })).toHaveLength(1);
  });

  it('applies a retention change in place and drops the TTL index when retention is turned off', async () => {
    const database = fixture.mongo.newDatabaseName('ix');
    const ttl = async () =>
      (await indexesOf(fixture.mongo.client.db(database).collection('loom_jobs'))).find((ix) => ix.name === 'loom_retention_completed')?.expireAfterSeconds;
    await fixture.newStore({ database, retention: { completed: '1d' } }).init();
    expect(await ttl()).toBe(86_400);
    await fixture.newStore({ database, retention: { completed: '2h' } }).init();
    expect(await ttl()).toBe(7_200);
    await fixture.newStore({ database, retention: { completed: false } }).init();
    expect(await ttl()).toBeUndefined();
  });

  it("removes settled wait tokens after the completed jobs' retention, pending ones never", async () => {
    const database = fixture.mongo.newDatabaseName('ix');
    const index = async (name: string) => (await indexesOf(fixture.mongo.client.db(database).collection('loom_wait_tokens'))).find((ix) => ix.name === name);
    await fixture.newStore({ database, retention: { completed: '2d' } }).init();
    // settledAt is absent on a pending token: the TTL monitor leaves a document without a date alone.
    expect(await index('loom_retention_tokens')).toMatchObject({ key: { settledAt: 1 }, expireAfterSeconds: 172_800 });
    expect(await index('loom_tokens_job')).toMatchObject({ key: { jobId: 1, createdAt: 1, _id: 1 } });
    await fixture.newStore({ database, retention: { completed: '1h' } }).init();
    expect((await index('loom_retention_tokens'))?.expireAfterSeconds).toBe(3_600);
    await fixture.newStore({ database, retention: { completed: false } }).init();
    expect(await index('loom_retention_tokens')).toBeUndefined();
  });

  it('replaces the name and dead-letter indexes of 0.1 with their list-page keys', async () => {
    const database = fixture.mongo.newDatabaseName('ix');
    const db = fixture.mongo.client.db(database);
    await db.collection('loom_jobs').createIndex({ name: 1, status: 1, createdAt: -1 }, { name: 'loom_name_status' });
    await db.collection('loom_dead_letters').createIndex({ name: 1, diedAt: -1 }, { name: 'loom_dead_name' });
    await fixture.newStore({ database }).init();
    const keyOf = async (collection: string, name: string) => (await indexesOf(db.collection(collection))).find((ix) => ix.name === name)?.key;
    expect(await keyOf('loom_jobs', 'loom_name_status')).toEqual({ name: 1, status: 1, createdAt: -1, _id: -1 });
    expect(await keyOf('loom_dead_letters', 'loom_dead_name')).toEqual({ name: 1, diedAt: -1, _id: -1 });
  });

  it('rejects bad options before touching the database', () => {
    expect(() => fixture.newStore({ retention: { completed: 'soon' } })).toThrow(/retention.completed/);
    expect(() => fixture.newStore({ dedupe: 'always' as never })).toThrow(/dedupe/);
    expect(() => fixture.newStore({ url: 'mongodb://x', client: fixture.mongo.client })).toThrow(/exactly one of url and client/);
  });
});
