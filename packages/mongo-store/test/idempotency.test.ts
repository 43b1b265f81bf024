import { describe, expect, it } from '@jest/globals';
import { Collection } from 'mongodb';
import { useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

const fixture = useMongoFixture();

const DRIVER_CALLS = [
  'insertMany',
  'insertOne',
  'bulkWrite',
  'updateOne',
  'updateMany',
  'find',
  'findOne',
  'deleteOne',
  'deleteMany',
  'countDocuments',
] as const;

/**
 * Stops a process at the moment the job of an enqueue is stored: once an insert into
 * `database`'s jobs collection has been acknowledged, the caller's enqueue waits on `gate`; when
 * `dies`, every later call of that process on `database` throws instead, as if it had crashed.
 * Calls of other processes (other clients, other databases) go through. Returns the restore.
 */
function stopAfterJobInsert(database: string, options: { gate?: Promise<void>; dies?: boolean }): { restore: () => void; stored: Promise<void> } {
  const proto = Collection.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const originals = DRIVER_CALLS.map((name) => [name, proto[name]] as const);
  let stopped = false;
  let reached = () => {};
  const stored = new Promise<void>((resolve) => (reached = resolve));
  const victims = new WeakSet<object>();
  for (const [name, original] of originals) {
    proto[name] = function (this: Collection, ...args: unknown[]) {
      if (this.dbName !== database) return original.apply(this, args);
      const client = (this as unknown as { client: object }).client;
      if (stopped && options.dies && victims.has(client)) throw new Error('the process died');
      const result = original.apply(this, args);
      // The job's insert: `insertOne` for one job, `insertMany` for several.
      if ((name !== 'insertMany' && name !== 'insertOne') || this.collectionName !== 'loom_jobs' || stopped) return result;
      return (result as Promise<unknown>).then(async (value) => {
        stopped = true;
        victims.add(client);
        reached();
        if (options.dies) throw new Error('the process died right after storing the job');
        await options.gate;
        return value;
      });
    };
  }
  return {
    stored,
    restore: () => {
      for (const [name, original] of originals) proto[name] = original;
    },
  };
}

/** Deletes what MongoDB's TTL monitor would, were `retention.completed` on and every finish old enough. */
async function expireAllCompleted(database: string): Promise<number> {
  const res = await fixture.mongo.client
    .db(database)
    .collection('loom_jobs')
    .deleteMany({ status: 'completed', finishedAt: { $lte: at(365 * 86_400_000) } });
  return res.deletedCount;
}

/** Two stores on one database through two separate clients: as two processes see it. */
async function twoProcesses(options: { dedupe?: 'retained' | 'forever' } = {}) {
  const database = fixture.mongo.newDatabaseName('idem');
  const a = fixture.newStore({ database, ...options, url: fixture.mongo.uri, client: undefined });
  const b = fixture.newStore({ database, ...options, url: fixture.mongo.uri, client: undefined });
  await Promise.all([a.init(), b.init()]);
  return { a, b, database, close: () => Promise.all([a.close(), b.close()]) };
}

describe('idempotency keys', () => {
  it('stores one job per key when two clients race many duplicate enqueues', async () => {
    const { a, b, close } = await twoProcesses();
    try {
      const keys = ['k0', 'k1', 'k2'];
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).enqueue([newJob({ idempotencyKey: keys[i % 3], payload: { i } })], { now: at(0) })),
      );
      const flat = results.flat();
      for (const key of keys) {
        const stored = await a.listJobs({ idempotencyKey: key });
        expect(stored).toHaveLength(1);
        const forKey = flat.filter((_, i) => keys[i % 3] === key);
        expect(new Set(forKey.map((r) => r.id))).toEqual(new Set([stored[0].id]));
        expect(forKey.filter((r) => !r.deduplicated)).toHaveLength(1);
      }
    } finally {
      await close();
    }
  });

  it("'retained': a dead job's key is free again", async () => {
    const { a, close } = await twoProcesses();
    try {
      const [first] = await a.enqueue([newJob({ idempotencyKey: 'pay:1' })], { now: at(0) });
      const [job] = await a.claim(claimRequest());
      await a.deadLetter({ jobId: first.id, token: job.lease!.token }, { reason: 'boom', now: at(2) });
      const [second] = await a.enqueue([newJob({ idempotencyKey: 'pay:1' })], { now: at(3) });
      expect(second).toMatchObject({ deduplicated: false });
      expect(second.id).not.toBe(first.id);
      // Replaying the dead job now would make two jobs with one key: refused, nothing changes.
      await expect(a.replayDeadLetter(first.id, at(4))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect(await a.listDeadLetters({})).toHaveLength(1);
      expect(await a.listJobs({ idempotencyKey: 'pay:1' })).toHaveLength(1);
    } finally {
      await close();
    }
  });

  it("'forever': a key is never reused, even after its job died or was removed, also under races", async () => {
    const { a, b, close } = await twoProcesses({ dedupe: 'forever' });
    try {
      const [first] = await a.enqueue([newJob({ idempotencyKey: 'pay:1' })], { now: at(0) });
      const [job] = await a.claim(claimRequest());
      await a.deadLetter({ jobId: first.id, token: job.lease!.token }, { reason: 'boom', now: at(2) });
      await a.purgeDeadLetters({});
      const again = await Promise.all([a, b, a, b].map((s) => s.enqueue([newJob({ idempotencyKey: 'pay:1' })], { now: at(3) })));
      for (const [result] of again) expect(result).toEqual({ id: first.id, deduplicated: true });
      expect(await a.listJobs({})).toEqual([]);

      const fresh = await Promise.all([a, b, a, b].map((s) => s.enqueue([newJob({ idempotencyKey: 'pay:2' })], { now: at(4) })));
      expect(new Set(fresh.map(([r]) => r.id)).size).toBe(1);
      expect(await a.listJobs({ idempotencyKey: 'pay:2' })).toHaveLength(1);
    } finally {
      await close();
    }
  });

  it("'forever': a crash right after the job was stored does not free its key, even once retention would remove the job", async () => {
    const database = fixture.mongo.newDatabaseName('idem');
    const dying = fixture.newStore({ database, dedupe: 'forever', url: fixture.mongo.uri, client: undefined });
    const survivor = fixture.newStore({ database, dedupe: 'forever', url: fixture.mongo.uri, client: undefined });
    await Promise.all([dying.init(), survivor.init()]);
    try {
      const { restore } = stopAfterJobInsert(database, { dies: true });
      try {
        await expect(dying.enqueue([newJob({ idempotencyKey: 'pay:1' })], { now: at(0) })).rejects.toThrow(/died/);
      } finally {
        restore();
      }
      const [stored] = await survivor.listJobs({ idempotencyKey: 'pay:1' });
      const [job] = await survivor.claim(claimRequest());
      expect(job.id).toBe(stored.id);
      await survivor.complete({ jobId: job.id, token: job.lease!.token }, { now: at(2) });
      // Its key's tombstone was never confirmed: the job is the proof the key was used, so retention keeps it.
      await expireAllCompleted(database);
      expect(await survivor.getJob(stored.id)).toMatchObject({ status: 'completed', finishedAt: at(2) });

      // The next enqueue of the key finds the job, confirms the key as its own, and lets retention have it.
      expect(await survivor.enqueue([newJob({ idempotencyKey: 'pay:1' })], { now: at(3) })).toEqual([{ id: stored.id, deduplicated: true }]);
      expect(await expireAllCompleted(database)).toBe(1);
      expect(await survivor.enqueue([newJob({ idempotencyKey: 'pay:1' })], { now: at(4) })).toEqual([{ id: stored.id, deduplicated: true }]);
      expect(await survivor.listJobs({})).toEqual([]);
    } finally {
      await Promise.all([dying.close(), survivor.close()]);
    }
  });

  it("'forever': a job that dies before its enqueue returned keeps its key; the slower enqueue reports its own job", async () => {
    const { a, b, database, close } = await twoProcesses({ dedupe: 'forever' });
    let resume = () => {};
    const gate = new Promise<void>((resolve) => (resume = resolve));
    const { restore, stored } = stopAfterJobInsert(database, { gate });
    try {
      const slow = a.enqueue([newJob({ idempotencyKey: 'pay:1' })], { now: at(0) });
      await stored; // the job is in the store; the enqueue that stored it has not returned
      // Meanwhile the job runs and dies at once (a dead job leaves the jobs collection and its key index).
      const [job] = await b.claim(claimRequest());
      await b.deadLetter({ jobId: job.id, token: job.lease!.token }, { reason: 'card declined', now: at(1) });
      expect(await b.enqueue([newJob({ idempotencyKey: 'pay:1' })], { now: at(2) })).toEqual([{ id: job.id, deduplicated: true }]);
      expect(await b.listJobs({})).toEqual([]);
      resume();
      expect(await slow).toEqual([{ id: job.id, deduplicated: false }]);
      expect(await b.listJobs({})).toEqual([]);
      expect(await b.enqueue([newJob({ idempotencyKey: 'pay:1' })], { now: at(3) })).toEqual([{ id: job.id, deduplicated: true }]);
    } finally {
      restore();
      resume();
      await close();
    }
  });

  it('refuses operator objects in place of ids and keys, and changes nothing', async () => {
    const { a, close } = await twoProcesses();
    try {
      await a.enqueue([newJob({ idempotencyKey: 'secret' })], { now: at(0) });
      const injected = { $ne: null } as unknown as string;
      await expect(a.getJob(injected)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await expect(a.listJobs({ idempotencyKey: injected })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await expect(a.complete({ jobId: injected, token: injected }, { now: at(1) })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await expect(a.enqueue([newJob({ idempotencyKey: injected })], { now: at(1) })).rejects.toMatchObject({
        code: 'INVALID_IDEMPOTENCY_KEY',
      });
      expect(await a.listJobs({})).toHaveLength(1);
    } finally {
      await close();
    }
  });
});
