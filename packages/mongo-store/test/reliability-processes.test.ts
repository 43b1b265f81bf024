import { describe, expect, it } from '@jest/globals';
import { chaosEnqueuer } from '../../../chaos/src/enqueuer.js';
import { effectsOf, exitWithin, keysFrom, startChaosScript, startChaosWorker, STARTUP_MS, useEmulatorProcess, type ChaosWorker } from './reliability-workers.js';
import { waitUntil } from './wait-until.js';

// Real processes on the emulator run by its bin: enqueue races, graceful and hard shutdowns.
// Scenarios already covered elsewhere: a SIGKILLed worker's job is recovered (multi-process.test.ts),
// a crash between the dead-letter insert and the job delete (dead-letter-reconcile.test.ts), two
// concurrent dead-letter replays making one job (the store conformance suite, on both topologies).
const RECOVERY_MS = 120_000;

const mongo = useEmulatorProcess();
let databases = 0;

function worker(database: string, owner: string, env: Record<string, string> = {}): ChaosWorker {
  return mongo.track(startChaosWorker(mongo.uri, database, owner, env));
}

async function enqueue(database: string, keys: string[]): Promise<void> {
  const enqueuer = await chaosEnqueuer(mongo.client, database);
  await enqueuer.enqueue(keys);
  await enqueuer.close();
}

const leasedBy = (database: string, owner: string) => mongo.client.db(database).collection('loom_jobs').countDocuments({ status: 'running', 'lease.owner': owner });
const completed = (database: string) => mongo.client.db(database).collection('loom_jobs').countDocuments({ status: 'completed' });

describe('enqueue races between processes', () => {
  it('2 processes x 1,000 concurrent enqueues on 100 keys store one job per key, with no error', async () => {
    const database = `rp_dedup_${process.pid}_${++databases}`;
    const keys = Array.from({ length: 1000 }, (_, i) => `key-${(i * 37) % 100}`); // each key 10 times, interleaved
    const racers = [0, 1].map(() => mongo.track(startChaosScript('enqueue-race', { MONGODB_URI: mongo.uri, DATABASE: database, KEYS: keys.join(',') })));
    await Promise.all(racers.map((r) => r.waitForLine(/^ARMED$/, STARTUP_MS)));
    for (const r of racers) r.process.stdin!.write('GO\n');
    // A failed enqueue rejects the process's Promise.all: no RESULT line, a non-zero exit.
    const results = await Promise.all(
      racers.map(async (r) => JSON.parse((await r.waitForLine(/^RESULT /, RECOVERY_MS)).slice('RESULT '.length)) as { id: string; deduplicated: boolean }[]),
    );
    expect(await Promise.all(racers.map((r) => r.exited))).toEqual([0, 0]);

    expect(await mongo.client.db(database).collection('loom_jobs').countDocuments({})).toBe(100);
    const idsByKey = new Map<string, Set<string>>();
    const created = new Map<string, number>();
    for (const perProcess of results) {
      expect(perProcess).toHaveLength(1000);
      perProcess.forEach((r, i) => {
        idsByKey.set(keys[i], (idsByKey.get(keys[i]) ?? new Set()).add(r.id));
        if (!r.deduplicated) created.set(keys[i], (created.get(keys[i]) ?? 0) + 1);
      });
    }
    expect([...idsByKey.values()].every((ids) => ids.size === 1)).toBe(true); // every caller got the one job
    expect(created.size).toBe(100);
    expect([...created.values()].every((n) => n === 1)).toBe(true); // and exactly one caller created it
  }, STARTUP_MS + RECOVERY_MS + 30_000);
});

describe('shutdown under load', () => {
  it('SIGTERM: exits within the grace + 1 s, leaves no job leased, and another worker finishes the rest', async () => {
    const database = `rp_graceful_${process.pid}_${++databases}`;
    const keys = keysFrom('g', 40);
    await enqueue(database, keys);
    const GRACE_MS = 2000;
    // Runs of up to 8 s that ignore ctx.signal: some finish within the grace, the rest are released.
    const stopping = worker(database, 'stopping', { CONCURRENCY: '4', GRACE_MS: String(GRACE_MS), MAX_DELAY_MS: '8000', IGNORE_ABORT: '1' });
    await waitUntil(async () => (await leasedBy(database, 'stopping')) === 4, STARTUP_MS, 'the worker to run 4 jobs at once');

    stopping.process.kill('SIGTERM');
    expect(await exitWithin(stopping, GRACE_MS + 1000)).toBe(0);
    expect(stopping.lines()).toContain('STOPPED');
    expect(await leasedBy(database, 'stopping')).toBe(0);

    const finisher = worker(database, 'finisher', { MAX_DELAY_MS: '20' });
    await waitUntil(async () => (await completed(database)) === keys.length, STARTUP_MS + RECOVERY_MS, 'every job to complete');
    const { sink } = await effectsOf(mongo.client.db(database));
    expect(keys.every((k) => sink.get(k) === 1)).toBe(true);
    await finisher.kill('SIGTERM');
  }, 2 * STARTUP_MS + RECOVERY_MS);

  it('SIGTERM twice: a hard stop within 1 s of the second signal; the leases go to another worker', async () => {
    const database = `rp_hard_${process.pid}_${++databases}`;
    const held = keysFrom('held', 4);
    await enqueue(database, held);
    // Runs that take a minute and ignore ctx.signal, with a minute of grace: only a hard stop ends them soon.
    const stubborn = worker(database, 'stubborn', { CONCURRENCY: '4', GRACE_MS: '60000', MAX_DELAY_MS: '60000', IGNORE_ABORT: '1' });
    await waitUntil(async () => (await leasedBy(database, 'stubborn')) === 4, STARTUP_MS, 'the stubborn worker to hold 4 jobs');
    const other = worker(database, 'other', { CONCURRENCY: '4', MAX_DELAY_MS: '20' });
    await other.waitForLine(/^READY /, STARTUP_MS);

    stubborn.process.kill('SIGTERM');
    // Two signals sent back to back can arrive as one; the second goes once the first is handled.
    await stubborn.waitForLine(/^STOPPING$/, 10_000);
    stubborn.process.kill('SIGTERM');
    expect(await exitWithin(stubborn, 1000)).toBe(130);

    await waitUntil(async () => (await completed(database)) === held.length, RECOVERY_MS, 'the other worker to finish the held jobs');
    const jobs = await mongo.client.db(database).collection('loom_jobs').find({}).toArray();
    expect(jobs.map((j) => (j.result as { owner: string }).owner)).toEqual(['other', 'other', 'other', 'other']);
    const { sink } = await effectsOf(mongo.client.db(database));
    expect(held.every((k) => sink.get(k) === 1)).toBe(true);
    await other.kill('SIGTERM');
  }, 2 * STARTUP_MS + RECOVERY_MS);
});
