import { describe, expect, it } from '@jest/globals';
import { chaosEnqueuer } from '../../../chaos/src/enqueuer.js';
import { TX_EFFECTS, type TxEffectRow } from '../../../chaos/src/chaos-job.js';
import {
  CLEAN,
  exitWithin,
  keysFrom,
  startChaosScript,
  startChaosWorker,
  STARTUP_MS,
  useEmulatorProcess,
  verdictOf,
  type ChaosWorker,
} from './reliability-workers.js';
import type { JobDocument } from '../src/schema/documents.js';
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

const leasedBy = (database: string, owner: string) =>
  mongo.client.db(database).collection('loom_jobs').countDocuments({ status: 'running', 'lease.owner': owner });
const completed = (database: string) => mongo.client.db(database).collection('loom_jobs').countDocuments({ status: 'completed' });

/** For each key, in order, the worker whose transaction committed its effect (and so completed the job). */
async function ownersOf(database: string, keys: readonly string[]): Promise<(string | undefined)[]> {
  const rows = await mongo.client
    .db(database)
    .collection<TxEffectRow>(TX_EFFECTS)
    .find({ key: { $in: [...keys] } })
    .toArray();
  return keys.map((k) =>
    rows
      .find((r) => r.key === k)
      ?.runs.map((r) => r.owner)
      .join('+'),
  );
}

describe('enqueue races between processes', () => {
  it(
    '2 processes x 1,000 concurrent enqueues on 100 keys store one job per key, with no error',
    async () => {
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
    },
    STARTUP_MS + RECOVERY_MS + 30_000,
  );
});

describe('shutdown under load', () => {
  it(
    'SIGTERM: runs that outlast the grace are released with their attempt given back; the worker stops and another finishes everything',
    async () => {
      const database = `rp_graceful_${process.pid}_${++databases}`;
      const db = mongo.client.db(database);
      const keys = keysFrom('g', 40);
      await enqueue(database, keys);
      // Every run takes 20 s and ignores ctx.signal: the 4 held at SIGTERM all outlast the 2 s grace.
      const stopping = worker(database, 'stopping', { CONCURRENCY: '4', GRACE_MS: '2000', FIXED_DELAY_MS: '20000', IGNORE_ABORT: '1' });
      await waitUntil(async () => (await leasedBy(database, 'stopping')) === 4, STARTUP_MS, 'the worker to run 4 jobs at once');
      const held = await db.collection<JobDocument>('loom_jobs').find({ status: 'running', 'lease.owner': 'stopping' }).toArray();
      expect(held.map((j) => j.attempt)).toEqual([1, 1, 1, 1]);

      stopping.process.kill('SIGTERM');
      // A roomy deadline: what matters is that the stop happens and releases, not how fast a loaded
      // machine does it. The worker releases before it prints STOPPED and exits.
      expect(await exitWithin(stopping, RECOVERY_MS)).toBe(0);
      expect(stopping.lines()).toEqual(expect.arrayContaining(['STOPPING', 'STOPPED']));
      const released = await db
        .collection<JobDocument>('loom_jobs')
        .find({ _id: { $in: held.map((j) => j._id) } })
        .toArray();
      expect(released.map((j) => [j.status, j.attempt, j.lease])).toEqual(held.map(() => ['queued', 0, undefined]));

      const finisher = worker(database, 'finisher', { MAX_DELAY_MS: '20' });
      await waitUntil(async () => (await completed(database)) === keys.length, STARTUP_MS + RECOVERY_MS, 'every job to complete');
      expect(await verdictOf(db, keys)).toMatchObject(CLEAN);
      // The released jobs were completed by the finisher (their effect committed by its runs).
      expect(
        await ownersOf(
          database,
          held.map((j) => j.idempotencyKey as string),
        ),
      ).toEqual(['finisher', 'finisher', 'finisher', 'finisher']);
      await finisher.kill('SIGTERM');
    },
    2 * STARTUP_MS + 3 * RECOVERY_MS,
  );

  it(
    'SIGTERM twice: a hard stop (exit 130) before the grace ends; the leases go to another worker',
    async () => {
      const database = `rp_hard_${process.pid}_${++databases}`;
      const held = keysFrom('held', 4);
      await enqueue(database, held);
      // Runs that take 10 minutes and ignore ctx.signal, with as much grace: only a hard stop ends them soon.
      const stubborn = worker(database, 'stubborn', { CONCURRENCY: '4', GRACE_MS: '600000', FIXED_DELAY_MS: '600000', IGNORE_ABORT: '1' });
      await waitUntil(async () => (await leasedBy(database, 'stubborn')) === 4, STARTUP_MS, 'the stubborn worker to hold 4 jobs');
      const other = worker(database, 'other', { CONCURRENCY: '4', MAX_DELAY_MS: '20' });
      await other.waitForLine(/^READY /, STARTUP_MS);

      stubborn.process.kill('SIGTERM');
      // Two signals sent back to back can arrive as one; the second goes once the first is handled.
      await stubborn.waitForLine(/^STOPPING$/, STARTUP_MS);
      stubborn.process.kill('SIGTERM');
      // A deadline far below the 10-minute grace and runs: only the hard stop can end it this soon.
      expect(await exitWithin(stubborn, RECOVERY_MS)).toBe(130);
      expect(stubborn.lines()).not.toContain('STOPPED');

      await waitUntil(async () => (await completed(database)) === held.length, RECOVERY_MS, 'the other worker to finish the held jobs');
      expect(await verdictOf(mongo.client.db(database), held)).toMatchObject(CLEAN);
      expect(await ownersOf(database, held)).toEqual(['other', 'other', 'other', 'other']);
      await other.kill('SIGTERM');
    },
    2 * STARTUP_MS + 3 * RECOVERY_MS,
  );
});
