import { afterEach, describe, expect, it } from '@jest/globals';
import { MongoEmulator } from '@loom/mongo-emulator';
import { MongoStore } from '../src/index.js';
import { CLAIM_SORT, claimFilter } from '../src/schema/filters.js';
import { at, claimRequest, newJob } from './jobs.js';
import { waitUntil } from './wait-until.js';

// These tests need the emulator object itself (to stop it, or to ask for a query plan), so they
// start one directly rather than through startTestMongo.
let emulator: MongoEmulator | undefined;
let store: MongoStore | undefined;

afterEach(async () => {
  await store?.close();
  await emulator?.stop();
  store = emulator = undefined;
});

function storeOn(uri: string): MongoStore {
  return new MongoStore({
    url: uri,
    database: 'trouble',
    retention: { completed: false },
    // Fail fast while the server is down; the engine retries with backoff.
    clientOptions: { serverSelectionTimeoutMS: 500, connectTimeoutMS: 500 },
    logger: { debug: () => {}, warn: () => {}, error: () => {} },
  });
}

describe('MongoDB going away', () => {
  it('surfaces errors while the server is down and works again once it is back', async () => {
    emulator = await MongoEmulator.start({ port: 0, replicaSet: false });
    const { port } = emulator;
    store = storeOn(emulator.uri);
    await store.init();
    await store.enqueue([newJob()], { now: at(0) });

    await emulator.stop();
    await expect(store.claim(claimRequest())).rejects.toThrow();
    await expect(store.enqueue([newJob()], { now: at(1) })).rejects.toThrow();

    // Same address, fresh (empty) server: the same store object carries on. A real server keeps
    // its indexes across a restart; the emulator does not, so another process's init() recreates
    // them (claims hint the claim index, and a missing one is an error, not a silent scan).
    emulator = await MongoEmulator.start({ port, replicaSet: false });
    const another = storeOn(emulator.uri);
    await another.init();
    await another.close();
    const [{ id }] = await store.enqueue([newJob()], { now: at(2) });
    const [job] = await store.claim(claimRequest('worker-a', at(3)));
    expect(job.id).toBe(id);
  });
});

describe('the change stream across a server restart', () => {
  it('reopens by itself after the server comes back, and wakes listeners again', async () => {
    emulator = await MongoEmulator.start({ port: 0 });
    const { port } = emulator;
    store = storeOn(emulator.uri);
    await store.init();
    const heard: string[] = [];
    const unsubscribe = store.subscribe((e) => heard.push(e.queue));
    const s = store;
    const hears = (queue: string) =>
      waitUntil(
        async () => {
          await s.enqueue([newJob({ queue })], { now: at(0) }).catch(() => undefined);
          return heard.includes(queue);
        },
        20_000,
        `an insert event for ${queue}`,
      );
    await hears('before');

    await emulator.stop();
    emulator = await MongoEmulator.start({ port });
    await hears('after');
    unsubscribe();
  });
});

describe('the claim query plan', () => {
  it('is answered by the partial claim index in claim order once there is a backlog', async () => {
    emulator = await MongoEmulator.start({ port: 0 });
    store = storeOn(emulator.uri);
    await store.init();
    // On a handful of jobs a planner may rightly fetch and sort them; with a backlog it must walk
    // loom_claim in claim order. (MongoStore also hints loom_claim, which the emulator ignores.)
    await store.enqueue(
      Array.from({ length: 300 }, (_, i) => newJob({ payload: { i }, priority: i % 3 })),
      { now: at(0) },
    );
    const filter = claimFilter({ queues: ['default'], names: ['send'], now: at(0) });
    expect(emulator.explainPlan('trouble', 'loom_jobs', filter, CLAIM_SORT as Record<string, 1 | -1>)).toBe('loom_claim');
  });
});
