/// <reference types="jest" />
import { LoomError, type FlowLimits, type JobRecord } from '@loom/core';
import { at, claimJobs, enqueueAndClaim, idsOf, leaseOf, mustGet, newJob, type ConformanceContext } from './harness.js';

export function describeHeartbeatMany(ctx: ConformanceContext): void {
  describe('heartbeatMany (batched heartbeats, fenced per job)', () => {
    /** Enqueues `n` jobs and claims them all in one claim at 0 (leases end at 30 s). */
    async function claimed(n: number, flow?: FlowLimits[]): Promise<JobRecord[]> {
      await ctx.store.enqueue(
        Array.from({ length: n }, (_, i) => newJob({ payload: { i } })),
        { now: at(0) },
      );
      const jobs = await claimJobs(ctx.store, { limit: n, now: at(0), ...(flow ? { flow } : {}) });
      expect(jobs).toHaveLength(n);
      return jobs;
    }

    it('extends every lease to its own end, one outcome per item in order; none is reclaimed before it', async () => {
      const jobs = await claimed(3);
      const outcomes = await ctx.store.heartbeatMany(
        jobs.map((job, i) => ({ lease: leaseOf(job), until: at(60_000 + i) })),
        at(20_000),
      );
      expect(outcomes).toEqual(['extended', 'extended', 'extended']);
      for (const [i, job] of jobs.entries()) expect((await mustGet(ctx.store, job.id)).lease).toEqual({ ...job.lease, until: at(60_000 + i) });
      expect(await claimJobs(ctx.store, { limit: 3, now: at(59_000), owner: 'worker-b' })).toEqual([]);
      expect(idsOf(await claimJobs(ctx.store, { limit: 3, now: at(60_001), owner: 'worker-b' }))).toEqual([jobs[0]!.id]);
    });

    it('reports lost for a lease taken over, one run out before `now`, a finished job, a forged token and an unknown job, changing none of them', async () => {
      const [kept, takenOver, ranOut, done, forged] = await claimed(5);
      // `takenOver` ran out at 30 s and worker-b took it; `ranOut` ran out too, but nobody took it yet.
      await ctx.store.extendLease(leaseOf(kept!), at(100_000), at(1));
      await ctx.store.extendLease(leaseOf(done!), at(100_000), at(1));
      await ctx.store.extendLease(leaseOf(forged!), at(100_000), at(1));
      const [again] = await claimJobs(ctx.store, { now: at(30_001), owner: 'worker-b' });
      expect([takenOver!.id, ranOut!.id]).toContain(again!.id);
      const [stale, untouched] = again!.id === takenOver!.id ? [takenOver!, ranOut!] : [ranOut!, takenOver!];
      await ctx.store.complete(leaseOf(done!), { now: at(30_002) });
      const before = await Promise.all([stale, untouched, done!, forged!].map((job) => mustGet(ctx.store, job.id)));
      const outcomes = await ctx.store.heartbeatMany(
        [
          { lease: leaseOf(kept!), until: at(130_000) },
          { lease: leaseOf(stale), until: at(130_000) },
          { lease: leaseOf(untouched), until: at(130_000) },
          { lease: leaseOf(done!), until: at(130_000) },
          { lease: { jobId: forged!.id, token: `${forged!.lease!.token}-forged` }, until: at(130_000) },
          { lease: { jobId: 'no-such-job', token: kept!.lease!.token }, until: at(130_000) },
        ],
        at(30_003),
      );
      expect(outcomes).toEqual(['extended', 'lost', 'lost', 'lost', 'lost', 'lost']);
      expect(await Promise.all([stale, untouched, done!, forged!].map((job) => mustGet(ctx.store, job.id)))).toEqual(before);
      expect((await mustGet(ctx.store, kept!.id)).lease?.until).toEqual(at(130_000));
    });

    it('reports cancel-requested for a job whose cancel was requested, having extended its lease all the same', async () => {
      const [plain, flagged] = await claimed(2);
      expect(await ctx.store.cancelJob(flagged!.id, { now: at(2) })).toMatchObject({ outcome: 'requested' });
      const outcomes = await ctx.store.heartbeatMany(
        [plain!, flagged!].map((job) => ({ lease: leaseOf(job), until: at(50_000) })),
        at(20_000),
      );
      expect(outcomes).toEqual(['extended', 'cancel-requested']);
      expect(await mustGet(ctx.store, flagged!.id)).toMatchObject({ status: 'running', lease: { until: at(50_000) } });
    });

    it('moves the globalConcurrency slots with the leases', async () => {
      const flow: FlowLimits[] = [{ name: 'send', globalConcurrency: 2 }];
      const jobs = await claimed(2, flow);
      await ctx.store.enqueue([newJob({ payload: { i: 'third' } })], { now: at(0) });
      expect(
        await ctx.store.heartbeatMany(
          jobs.map((job) => ({ lease: leaseOf(job), until: at(50_000) })),
          at(20_000),
        ),
      ).toEqual(['extended', 'extended']);
      const peer = await ctx.peer();
      expect(await claimJobs(peer, { limit: 3, now: at(40_000), owner: 'worker-b', flow })).toEqual([]);
      // Both leases (and slots) end at 50 s: then two of the three jobs run again.
      expect(await claimJobs(peer, { limit: 3, now: at(50_001), owner: 'worker-b', flow })).toHaveLength(2);
    });

    it('answers an empty batch with no outcomes, and refuses bad input with INVALID_ARGUMENT, changing nothing', async () => {
      expect(await ctx.store.heartbeatMany([], at(1))).toEqual([]);
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const before = await mustGet(ctx.store, id);
      for (const bad of [null, 'jobs', [{ lease, until: at(9_000) }, { until: at(9_000) }], [{ lease }], [{ lease, until: 'soon' }]]) {
        const error = await ctx.store.heartbeatMany(bad as never, at(2)).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(LoomError.is(error, 'INVALID_ARGUMENT')).toBe(true);
      }
      expect(await mustGet(ctx.store, id)).toEqual(before);
    });
  });
}
