import { describe, expect, it } from '@jest/globals';
import { useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

const fixture = useMongoFixture();

/** Two stores on one database through two separate clients: as two processes see it. */
async function twoProcesses(options: { dedupe?: 'retained' | 'forever' } = {}) {
  const database = fixture.mongo.newDatabaseName('idem');
  const a = fixture.newStore({ database, ...options, url: fixture.mongo.uri, client: undefined });
  const b = fixture.newStore({ database, ...options, url: fixture.mongo.uri, client: undefined });
  await Promise.all([a.init(), b.init()]);
  return { a, b, close: () => Promise.all([a.close(), b.close()]) };
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
