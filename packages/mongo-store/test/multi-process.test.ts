import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MongoClient } from 'mongodb';
import { MongoStore } from '../src/index.js';
import { buildWorkers, exitWithin, spawnScript, startEmulatorProcess, WORKER, type Child } from './processes/children.js';
import { waitUntil } from './wait-until.js';

// Real processes against the emulator run by its bin: workers are killed for real, and leases
// expire in real time (1.5 s), so every wait below is on a condition with a deadline.
const STARTUP_MS = 60_000; // generous: a busy CI machine can be slow to start even compiled processes
const BUILD_MS = 240_000;
const RECOVERY_MS = 60_000;

let emulator: { uri: string; child: Child };
let client: MongoClient;
const children: Child[] = [];
let databases = 0;

beforeAll(() => buildWorkers(), BUILD_MS);

beforeAll(async () => {
  emulator = await startEmulatorProcess(STARTUP_MS);
  client = new MongoClient(emulator.uri);
  await client.connect();
}, STARTUP_MS);

afterAll(async () => {
  await Promise.all(children.map((c) => c.kill('SIGKILL')));
  await client?.close();
  await emulator?.child.kill('SIGTERM');
});

function worker(database: string, mode: string, env: Record<string, string> = {}): Child {
  const child = spawnScript(WORKER, [], { MONGODB_URI: emulator.uri, DATABASE: database, MODE: mode, ...env });
  children.push(child);
  return child;
}

async function enqueueCharge(database: string): Promise<string> {
  const store = new MongoStore({ url: emulator.uri, database });
  await store.init();
  try {
    const [{ id }] = await store.enqueue([{ name: 'charge', queue: 'default', payload: { order: 'o1' }, priority: 0, runAt: new Date(), maxAttempts: 4 }], {
      now: new Date(),
    });
    return id;
  } finally {
    await store.close();
  }
}

function collections(database: string) {
  const db = client.db(database);
  return {
    jobs: db.collection('loom_jobs'),
    runs: db.collection<{ jobId: string; attempt: number; pid: number; mode: string; order: number }>('runs'),
    effects: db.collection('effects'),
  };
}

describe('several processes on one MongoDB', () => {
  it(
    'a worker SIGKILLed mid-job loses it; another completes it after the lease expires',
    async () => {
      const database = `mp_kill_${process.pid}_${++databases}`;
      const { jobs, runs } = collections(database);
      const id = await enqueueCharge(database);

      const doomed = worker(database, 'hang');
      await waitUntil(async () => (await runs.countDocuments({ mode: 'hang' })) === 1, STARTUP_MS, 'the first worker to start the job');
      expect(await doomed.kill('SIGKILL')).toBe('SIGKILL');

      const survivor = worker(database, 'complete');
      await waitUntil(async () => (await jobs.findOne({ status: 'completed' })) !== null, STARTUP_MS + RECOVERY_MS, 'the job to complete');
      const job = await jobs.findOne({});
      expect(job?._id.toHexString()).toBe(id);
      expect(job).toMatchObject({ status: 'completed', attempt: 2 });
      const history = await runs.find({}, { sort: { attempt: 1 } }).toArray();
      expect(history.map((r) => [r.mode, r.attempt])).toEqual([
        ['hang', 1],
        ['complete', 2],
      ]);
      expect(history[0].pid).toBe(doomed.process.pid);
      expect(history[1].pid).toBe(survivor.process.pid);
      await survivor.kill('SIGTERM');
    },
    2 * STARTUP_MS + RECOVERY_MS,
  );

  it(
    'ctx.transaction: a crash before the commit leaves no effect; the rerun writes it exactly once',
    async () => {
      const database = `mp_tx_${process.pid}_${++databases}`;
      const { jobs, runs, effects } = collections(database);
      await enqueueCharge(database);

      const crashing = worker(database, 'crash-in-transaction');
      expect(await exitWithin(crashing, STARTUP_MS)).toBe('SIGKILL');
      expect(await runs.countDocuments({})).toBe(1);
      expect(await effects.countDocuments({})).toBe(0); // the open transaction never committed
      expect((await jobs.findOne({}))?.status).toBe('running');

      const rerun = worker(database, 'transaction');
      await waitUntil(async () => (await jobs.findOne({ status: 'completed' })) !== null, STARTUP_MS + RECOVERY_MS, 'the rerun to complete');
      expect(await effects.countDocuments({})).toBe(1);
      expect((await effects.findOne({}))?.pid).toBe(rerun.process.pid);
      expect(await jobs.findOne({})).toMatchObject({ status: 'completed', attempt: 2 });
      await rerun.kill('SIGTERM');
    },
    2 * STARTUP_MS + RECOVERY_MS,
  );

  it(
    'a process that subscribed and closed its store ends by itself (no stream or timer left)',
    async () => {
      const database = `mp_close_${process.pid}_${++databases}`;
      const child = worker(database, 'subscribe-close');
      await child.waitForLine(/^CLOSED$/, STARTUP_MS);
      expect(await exitWithin(child, 20_000)).toBe(0);
    },
    STARTUP_MS + 30_000,
  );

  it(
    'two processes enqueueing the same keys at once store one job per key and agree on its id',
    async () => {
      const database = `mp_dup_${process.pid}_${++databases}`;
      const { jobs } = collections(database);
      const keys = Array.from({ length: 10 }, (_, i) => `order-${i}`);
      const racers = [worker(database, 'enqueue', { KEYS: keys.join(',') }), worker(database, 'enqueue', { KEYS: keys.join(',') })];
      await Promise.all(racers.map((r) => r.waitForLine(/^ARMED$/, STARTUP_MS)));
      for (const r of racers) r.process.stdin!.write('GO\n');
      const [a, b] = await Promise.all(
        racers.map(async (r) => JSON.parse((await r.waitForLine(/^RESULT /, RECOVERY_MS)).slice('RESULT '.length)) as { id: string; deduplicated: boolean }[]),
      );
      expect(await jobs.countDocuments({})).toBe(keys.length);
      for (let i = 0; i < keys.length; i++) {
        expect(a[i].id).toBe(b[i].id);
        expect([a[i].deduplicated, b[i].deduplicated].sort()).toEqual([false, true]);
      }
    },
    STARTUP_MS + RECOVERY_MS,
  );
});
