/// <reference types="jest" />
import { LoomError, type JobRecord } from '@loom/core';
import { at, claimJobs, enqueueAndClaim, leaseOf, mustGet, newJob, type ConformanceContext } from './harness.js';

export function describeCompleteMany(ctx: ConformanceContext): void {
  describe('completeMany (group commit of completions, fenced per job)', () => {
    /** Enqueues `n` jobs and claims them all in one claim. */
    async function claimed(n: number): Promise<JobRecord[]> {
      await ctx.store.enqueue(
        Array.from({ length: n }, (_, i) => newJob({ payload: { i } })),
        { now: at(0) },
      );
      const jobs = await claimJobs(ctx.store, { limit: n, now: at(1) });
      expect(jobs).toHaveLength(n);
      return jobs;
    }

    it('completes every job with its own result, reporting one outcome per item in order', async () => {
      const jobs = await claimed(3);
      const outcomes = await ctx.store.completeMany(
        jobs.map((job, i) => (i === 1 ? { lease: leaseOf(job) } : { lease: leaseOf(job), result: { n: i } })),
        at(10),
      );
      expect(outcomes).toEqual(['completed', 'completed', 'completed']);
      for (const [i, job] of jobs.entries()) {
        const stored = await mustGet(ctx.store, job.id);
        expect(stored).toMatchObject({ status: 'completed', finishedAt: at(10) });
        expect(stored.lease).toBeUndefined();
        expect(stored.result).toEqual(i === 1 ? undefined : { n: i });
      }
    });

    it("appends each item's log lines in its completion, keeping the tail's last `keep`; bad lines fail only their item", async () => {
      const line = (i: number, fields?: Record<string, unknown>) => ({
        at: at(i),
        level: 'info' as const,
        msg: `line ${i}`,
        attempt: 1,
        ...(fields ? { fields } : {}),
      });
      const jobs = await claimed(4);
      await ctx.store.appendLogs(leaseOf(jobs[0]!), [line(1), line(2)], at(5));
      const outcomes = await ctx.store.completeMany(
        [
          { lease: leaseOf(jobs[0]!), logs: { lines: [line(3, { k: 'v' })], keep: 2 } },
          { lease: leaseOf(jobs[1]!), result: 'r', logs: { lines: [line(4)], keep: 100 } },
          { lease: leaseOf(jobs[2]!) },
          { lease: leaseOf(jobs[3]!), logs: { lines: [{ ...line(5), level: 'trace' as never }], keep: 100 } },
        ],
        at(10),
      );
      expect(outcomes.slice(0, 3)).toEqual(['completed', 'completed', 'completed']);
      expect(LoomError.is((outcomes[3] as { error: Error }).error, 'INVALID_ARGUMENT')).toBe(true);
      expect(await mustGet(ctx.store, jobs[0]!.id)).toMatchObject({ status: 'completed', logs: [line(2), line(3, { k: 'v' })] });
      expect(await mustGet(ctx.store, jobs[1]!.id)).toMatchObject({ status: 'completed', result: 'r', logs: [line(4)] });
      expect((await mustGet(ctx.store, jobs[2]!.id)).logs).toBeUndefined();
      expect(await mustGet(ctx.store, jobs[3]!.id)).toMatchObject({ status: 'running' });
      expect((await mustGet(ctx.store, jobs[3]!.id)).logs).toBeUndefined();
      // One item alone (a store may complete it by another path).
      const outcome = await ctx.store.completeMany([{ lease: leaseOf(jobs[3]!), logs: { lines: [line(6)], keep: 1 } }], at(11));
      expect(outcome).toEqual(['completed']);
      expect(await mustGet(ctx.store, jobs[3]!.id)).toMatchObject({ status: 'completed', logs: [line(6)] });
    });

    it('stores no log line of a completion whose lease was taken over', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store, {}, { now: at(1) });
      const [again] = await claimJobs(ctx.store, { now: at(40_000), owner: 'worker-b' });
      expect(again.id).toBe(id);
      const line = { at: at(2), level: 'warn' as const, msg: 'late', attempt: 1 };
      expect(await ctx.store.completeMany([{ lease, logs: { lines: [line], keep: 10 } }], at(40_001))).toEqual(['lost']);
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'running' });
      expect((await mustGet(ctx.store, id)).logs).toBeUndefined();
    });

    /** Three jobs claimed; the second one's lease expires and worker-b takes it over (`again`). */
    async function secondTakenOver() {
      const [first, second, third] = await claimed(3);
      const stale = leaseOf(second);
      await ctx.store.extendLease(leaseOf(first), at(100_000), at(2));
      await ctx.store.extendLease(leaseOf(third), at(100_000), at(2));
      const [again] = await claimJobs(ctx.store, { now: at(40_000), owner: 'worker-b' });
      expect(again.id).toBe(second.id);
      return { first, second, third, stale, again, before: await mustGet(ctx.store, second.id) };
    }

    it('a job whose lease was taken over is not completed and is reported lost; the others complete', async () => {
      const { first, second, third, stale, before } = await secondTakenOver();
      const outcomes = await ctx.store.completeMany(
        [first, second, third].map((job) => ({ lease: job === second ? stale : leaseOf(job), result: 'stale?' })),
        at(40_001),
      );
      expect(outcomes).toEqual(['completed', 'lost', 'completed']);
      expect(await mustGet(ctx.store, second.id)).toEqual(before);
      expect(await mustGet(ctx.store, first.id)).toMatchObject({ status: 'completed' });
      expect(await mustGet(ctx.store, third.id)).toMatchObject({ status: 'completed' });
    });

    it('without results too: a job whose lease was taken over is lost and unchanged, the others complete, and the new holder completes it', async () => {
      const { first, second, third, stale, again, before } = await secondTakenOver();
      // The stale lease's token and the new holder's are both of this store; only the new one fences the job.
      const outcomes = await ctx.store.completeMany(
        [first, second, third].map((job) => ({ lease: job === second ? stale : leaseOf(job) })),
        at(40_001),
      );
      expect(outcomes).toEqual(['completed', 'lost', 'completed']);
      expect(await mustGet(ctx.store, second.id)).toEqual(before);
      for (const job of [first, third]) expect(await mustGet(ctx.store, job.id)).toMatchObject({ status: 'completed', finishedAt: at(40_001) });
      expect(await ctx.store.completeMany([{ lease: leaseOf(again) }, { lease: leaseOf(first) }], at(40_002))).toEqual(['completed', 'lost']);
      expect(await mustGet(ctx.store, second.id)).toMatchObject({ status: 'completed', finishedAt: at(40_002) });
      expect(await mustGet(ctx.store, first.id)).toMatchObject({ finishedAt: at(40_001) });
    });

    it('reports lost for every item of one job whose token does not hold its lease, beside the item that does', async () => {
      // One batch may carry a job twice: the holder's completion and a stale one (a run whose lease
      // was taken over) or a forged one. A fenced write reports only the holder's item completed.
      const { first, second, third, stale, again } = await secondTakenOver();
      const outcomes = await ctx.store.completeMany(
        [
          { lease: leaseOf(again), result: 'holder' },
          { lease: stale, result: 'stale' },
          { lease: { jobId: second.id, token: 'forged-token' }, result: 'forged' },
          { lease: leaseOf(first) },
        ],
        at(40_001),
      );
      expect(outcomes).toEqual(['completed', 'lost', 'lost', 'completed']);
      expect(await mustGet(ctx.store, second.id)).toMatchObject({ status: 'completed', result: 'holder' });
      expect(await ctx.store.completeMany([{ lease: leaseOf(third) }, { lease: leaseOf(third) }], at(40_002))).toEqual(['completed', 'lost']);
    });

    it('reports lost for a job already completed, a forged token and an unknown job, changing nothing', async () => {
      const [done, other] = await claimed(2);
      await ctx.store.complete(leaseOf(done), { result: 'first', now: at(5) });
      const before = await mustGet(ctx.store, done.id);
      const outcomes = await ctx.store.completeMany(
        [
          { lease: leaseOf(done), result: 'second' },
          { lease: { jobId: other.id, token: `${other.lease!.token}-forged` } },
          { lease: { jobId: 'no-such-job', token: other.lease!.token } },
        ],
        at(6),
      );
      expect(outcomes).toEqual(['lost', 'lost', 'lost']);
      expect(await mustGet(ctx.store, done.id)).toEqual(before);
      expect(await mustGet(ctx.store, other.id)).toMatchObject({ status: 'running' });
    });

    it('reports cancelled for a job whose cancel was requested, leaving it running for its holder to end', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      expect(await ctx.store.cancelJob(id, { now: at(2) })).toMatchObject({ outcome: 'requested' });
      expect(await ctx.store.completeMany([{ lease, result: 'late' }], at(3))).toEqual(['cancelled']);
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'running' });
      await ctx.store.completeCancel(lease, at(4));
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'cancelled' });
    });

    it('answers an empty batch with no outcomes, and refuses bad input with INVALID_ARGUMENT, changing nothing', async () => {
      expect(await ctx.store.completeMany([], at(1))).toEqual([]);
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const before = await mustGet(ctx.store, id);
      for (const bad of [null, 'jobs', [{ lease }, { result: 1 }], [{ lease: null }]]) {
        const error = await ctx.store.completeMany(bad as never, at(2)).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(LoomError.is(error, 'INVALID_ARGUMENT')).toBe(true);
      }
      expect(await mustGet(ctx.store, id)).toEqual(before);
    });
  });
}
