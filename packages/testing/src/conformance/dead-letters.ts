/// <reference types="jest" />
import { at, claimJobs, enqueueAndClaim, enqueueOne, idsOf, mustGet, newJob, type ConformanceContext } from './harness.js';
import { sampleError } from './transitions.js';

export function describeDeadLetters(ctx: ConformanceContext): void {
  /** Enqueues, claims and dead-letters a job at `diedAt`. */
  async function dead(overrides: Parameters<typeof enqueueAndClaim>[1] = {}, diedAt = at(100)): Promise<string> {
    const { id, lease } = await enqueueAndClaim(ctx.store, overrides);
    await ctx.store.deadLetter(lease, { reason: `died at ${diedAt.toISOString()}`, error: sampleError(1), now: diedAt });
    return id;
  }

  describe('dead letters', () => {
    it('deadLetter moves the job with its full history; getJob shows it dead', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store, { idempotencyKey: 'dl-key' }, { leaseMs: 1_000 });
      await ctx.store.retry(lease, { runAt: at(2_000), error: sampleError(1), now: at(1_000) });
      const [again] = await claimJobs(ctx.store, { now: at(2_000) });
      await ctx.store.deadLetter({ jobId: id, token: again.lease!.token }, { reason: 'attempt 2 failed', error: sampleError(2), now: at(3_000) });

      const job = await mustGet(ctx.store, id);
      expect(job).toMatchObject({ id, status: 'dead', deadReason: 'attempt 2 failed', finishedAt: at(3_000), attempt: 2 });
      expect(job.errors).toEqual([sampleError(1), sampleError(2)]);
      const letters = await ctx.store.listDeadLetters({});
      expect(letters).toHaveLength(1);
      expect(letters[0]).toMatchObject({ id, reason: 'attempt 2 failed', diedAt: at(3_000), job: { id, status: 'dead', errors: job.errors } });
      expect(await ctx.store.listJobs({})).toEqual([]);
      expect(await claimJobs(ctx.store, { now: at(999_999) })).toEqual([]);
      expect((await ctx.store.stats()).deadLetters).toBe(1);
    });

    it('deadLetter without an error keeps the history as it was', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      await ctx.store.deadLetter(lease, { reason: 'lease expired 4 times', now: at(5) });
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'dead', errors: [], deadReason: 'lease expired 4 times' });
    });

    it('frees the idempotency key of a dead job', async () => {
      const id = await dead({ idempotencyKey: 'again' });
      const [fresh] = await ctx.store.enqueue([newJob({ idempotencyKey: 'again' })], { now: at(200) });
      expect(fresh.deduplicated).toBe(false);
      expect(fresh.id).not.toBe(id);
    });

    it('lists dead letters newest first, filtered by name, queue and before, limited', async () => {
      const a1 = await dead({ name: 'a' }, at(100));
      const b1 = await dead({ name: 'b', queue: 'other' }, at(200));
      const a2 = await dead({ name: 'a' }, at(300));
      expect(idsOf(await ctx.store.listDeadLetters({}))).toEqual([a2, b1, a1]);
      expect(idsOf(await ctx.store.listDeadLetters({ name: 'a' }))).toEqual([a2, a1]);
      expect(idsOf(await ctx.store.listDeadLetters({ queue: 'other' }))).toEqual([b1]);
      expect(idsOf(await ctx.store.listDeadLetters({ before: at(300) }))).toEqual([b1, a1]);
      expect(idsOf(await ctx.store.listDeadLetters({ limit: 2 }))).toEqual([a2, b1]);
    });

    it('replays a dead letter: same id, queued at now, attempts reset (kept in priorAttempts), errors and steps kept', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store, { idempotencyKey: 'replay-key' });
      const charged = { name: 'charge', kind: 'step' as const, status: 'completed' as const, result: { chargeId: 'c1' }, at: at(50) };
      await ctx.store.recordStep(lease, charged, at(50));
      await ctx.store.deadLetter(lease, { reason: 'email bounced', error: sampleError(1), now: at(100) });
      expect(await ctx.store.replayDeadLetter(id, at(500))).toBe(id);
      const job = await mustGet(ctx.store, id);
      expect(job).toMatchObject({
        id,
        status: 'queued',
        attempt: 0,
        priorAttempts: 1,
        runAt: at(500),
        errors: [sampleError(1)],
        steps: [charged],
        idempotencyKey: 'replay-key',
      });
      expect(job.lease).toBeUndefined();
      expect(job.deadReason).toBeUndefined();
      expect(await ctx.store.listDeadLetters({})).toEqual([]);
      expect(await claimJobs(ctx.store, { now: at(499) })).toEqual([]);
      const [claimed] = await claimJobs(ctx.store, { now: at(500) });
      expect(claimed).toMatchObject({ id, attempt: 1 });
      const [dup] = await ctx.store.enqueue([newJob({ idempotencyKey: 'replay-key' })], { now: at(600) });
      expect(dup).toEqual({ id, deduplicated: true });
    });

    it('makes one job from two concurrent replays', async () => {
      const id = await dead();
      const results = await Promise.all([ctx.store.replayDeadLetter(id, at(500)), ctx.store.replayDeadLetter(id, at(500))]);
      expect(results.filter((r) => r === id)).toHaveLength(1);
      expect(results.filter((r) => r === null)).toHaveLength(1);
      expect(idsOf(await ctx.store.listJobs({}))).toEqual([id]);
      expect(await claimJobs(ctx.store, { now: at(500), limit: 5 })).toHaveLength(1);
    });

    it('replay of an unknown or already replayed dead letter returns null', async () => {
      expect(await ctx.store.replayDeadLetter('no-such-job', at(1))).toBeNull();
      const id = await dead();
      await ctx.store.replayDeadLetter(id, at(500));
      expect(await ctx.store.replayDeadLetter(id, at(501))).toBeNull();
      const queued = await enqueueOne(ctx.store, {}, at(502));
      expect(await ctx.store.replayDeadLetter(queued, at(503))).toBeNull();
    });

    it('purges the dead letters matching a filter and returns how many', async () => {
      const a1 = await dead({ name: 'a' }, at(100));
      const b1 = await dead({ name: 'b' }, at(200));
      const a2 = await dead({ name: 'a' }, at(300));
      expect(await ctx.store.purgeDeadLetters({ name: 'a', before: at(300) })).toBe(1);
      expect(idsOf(await ctx.store.listDeadLetters({}))).toEqual([a2, b1]);
      expect(await ctx.store.getJob(a1)).toBeNull();
      expect(await ctx.store.replayDeadLetter(a1, at(400))).toBeNull();
      expect(await ctx.store.purgeDeadLetters({})).toBe(2);
      expect(await ctx.store.listDeadLetters({})).toEqual([]);
      expect((await ctx.store.stats()).deadLetters).toBe(0);
    });
  });
}
