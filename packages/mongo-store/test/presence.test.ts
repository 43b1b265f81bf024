import { afterEach, describe, expect, it } from '@jest/globals';
import { MongoClient, type IndexDescriptionInfo } from 'mongodb';
import { MongoEmulator } from '@loom/mongo-emulator';
import type { WorkerPresence } from '@loom/core';
import { indexPlan, MongoStore } from '../src/index.js';
import { quietLogger } from './fixture.js';

// Issue 34, item 4: the rows of engines that died without stopping must not pile up in the
// workers collection, whether or not anyone lists them: a TTL index on `expiresAt` deletes them.
// The emulator's TTL monitor is run on demand with a clock the test sets (mongod's runs once a
// minute on its wall clock).

let emulator: MongoEmulator | undefined;
let client: MongoClient | undefined;
afterEach(async () => {
  await client?.close();
  await emulator?.stop();
  client = undefined;
  emulator = undefined;
});

function row(id: string, seen: Date): WorkerPresence {
  return {
    id,
    host: 'h',
    pid: 1,
    version: '0.1.0',
    node: 'v22.0.0',
    queues: ['default'],
    concurrency: 1,
    running: 0,
    runningJobIds: [],
    state: 'running',
    startedAt: seen,
    lastSeenAt: seen,
    expiresAt: new Date(seen.getTime() + 15_000),
  };
}

describe('MongoStore presence rows', () => {
  it('keeps them in <prefix>workers with a TTL index on expiresAt, which deletes the rows of engines gone', async () => {
    let now = new Date('2026-06-01T12:00:00Z');
    emulator = await MongoEmulator.start({ port: 0, ttlIntervalMs: 0, clock: { now: () => now } });
    client = new MongoClient(emulator.uri);
    const store = new MongoStore({ client, database: 'presence', logger: quietLogger });
    await store.init();
    const indexes = (await client.db('presence').collection('loom_workers').listIndexes().toArray()) as IndexDescriptionInfo[];
    const plan = indexPlan({ retentionSeconds: { completed: false, dead: false } });
    expect(plan.workers).toEqual([{ name: 'loom_workers_expiry', key: { expiresAt: 1 }, expireAfterSeconds: 0 }]);
    expect(indexes.find((ix) => ix.name === 'loom_workers_expiry')).toMatchObject({ key: { expiresAt: 1 }, expireAfterSeconds: 0 });

    await store.recordPresence(row('gone', now));
    await store.recordPresence(row('alive', new Date(now.getTime() + 10_000)));
    now = new Date(now.getTime() + 20_000);
    expect(emulator.runTtlSweep()).toBe(1);
    const stored = await client.db('presence').collection('loom_workers').find().toArray();
    expect(stored.map((doc) => doc._id)).toEqual(['alive']);
    expect((await store.listPresence(now)).map((w) => w.id)).toEqual(['alive']);
    await store.close();
  });
});
