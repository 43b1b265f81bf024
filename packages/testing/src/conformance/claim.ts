/// <reference types="jest" />
import {
  orderedIt,
  partitionedIt,
  at,
  claimJobs,
  claimOne,
  enqueueAndClaim,
  enqueueOne,
  idsOf,
  LEASE_MS,
  mustGet,
  newJob,
  type ConformanceContext,
} from './harness.js';

export function describeClaim(ctx: ConformanceContext): void {
  describe('claim', () => {
    it('leases a job: running, a fresh token, lease.until, attempt 1, startedAt', async () => {
      const id = await enqueueOne(ctx.store);
      const [job] = await claimJobs(ctx.store, { now: at(100), owner: 'engine-1' });
      expect(job).toMatchObject({ id, status: 'running', attempt: 1, startedAt: at(100), updatedAt: at(100) });
      expect(job.lease).toMatchObject({ owner: 'engine-1', until: at(100 + LEASE_MS) });
      expect(typeof job.lease?.token).toBe('string');
      expect(job.lease?.token.length).toBeGreaterThan(0);
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'running', lease: job.lease, attempt: 1 });
      expect(await claimJobs(ctx.store, { now: at(100) })).toEqual([]);
    });

    it('never hands one job to two of many concurrent claims', async () => {
      const results = await ctx.store.enqueue(
        Array.from({ length: 50 }, (_, i) => newJob({ payload: { i } })),
        { now: at(0) },
      );
      const claims = await Promise.all(Array.from({ length: 20 }, (_, i) => claimJobs(ctx.store, { limit: 4, owner: `worker-${i}`, now: at(1) })));
      const claimed = claims.flat();
      expect(claimed).toHaveLength(50);
      expect(new Set(idsOf(claimed))).toEqual(new Set(idsOf(results)));
      expect(new Set(claimed.map((j) => j.lease?.token)).size).toBe(50);
    });

    it('never hands one job to two concurrent single-job claims', async () => {
      await ctx.store.enqueue(
        Array.from({ length: 10 }, (_, i) => newJob({ payload: { i } })),
        { now: at(0) },
      );
      const claims = await Promise.all(Array.from({ length: 25 }, () => claimJobs(ctx.store, { now: at(1) })));
      const claimed = claims.flat();
      expect(claimed).toHaveLength(10);
      expect(new Set(idsOf(claimed)).size).toBe(10);
    });

    // On a partitioned store, priority, runAt and enqueue order hold within a partition only (the
    // cases above and below are skipped there): a claim takes the partitions in turn, each in that
    // order, so a lower job of one partition may start before a higher one of another. What holds
    // across partitions, whatever their number: a claim hides no due job (one with room takes them
    // all), takes none twice and none not due, and claims of one job each take every due job in as
    // many claims, so no partition is passed over while it has one.
    partitionedIt(ctx)('partitioned: a claim with room takes every due job, once; single claims take them all in as many claims', async () => {
      const due = await ctx.store.enqueue(
        Array.from({ length: 12 }, (_, i) => newJob({ priority: i % 4, runAt: at(-i * 100), payload: { i } })),
        { now: at(0) },
      );
      const later = await enqueueOne(ctx.store, { priority: 99, runAt: at(60_000) });
      const all = await claimJobs(ctx.store, { limit: 20, now: at(1) });
      expect(new Set(idsOf(all))).toEqual(new Set(idsOf(due)));
      expect(all).toHaveLength(12);
      expect(idsOf(all)).not.toContain(later);

      const more = await ctx.store.enqueue(
        Array.from({ length: 10 }, (_, i) => newJob({ name: 'one-by-one', priority: i % 3, payload: { i } })),
        { now: at(2) },
      );
      const oneByOne: string[] = [];
      for (let i = 0; i < 10; i++) oneByOne.push(...idsOf(await claimJobs(ctx.store, { names: ['one-by-one'], limit: 1, now: at(3) })));
      expect(oneByOne).toHaveLength(10);
      expect(new Set(oneByOne)).toEqual(new Set(idsOf(more)));
      expect(await claimJobs(ctx.store, { names: ['one-by-one'], now: at(3) })).toEqual([]);
    });

    orderedIt(ctx)('claims higher priority first, then earlier runAt, then enqueue order', async () => {
      const low = await enqueueOne(ctx.store, { priority: 0, runAt: at(-5_000) });
      const fifo1 = await enqueueOne(ctx.store, { priority: 5, runAt: at(-1_000) }, at(1));
      const fifo2 = await enqueueOne(ctx.store, { priority: 5, runAt: at(-1_000) }, at(2));
      const earlier = await enqueueOne(ctx.store, { priority: 5, runAt: at(-2_000) }, at(3));
      const high = await enqueueOne(ctx.store, { priority: 10, runAt: at(0) }, at(4));
      const negative = await enqueueOne(ctx.store, { priority: -1, runAt: at(-9_000) }, at(5));
      const order: string[] = [];
      for (let i = 0; i < 6; i++) order.push((await claimOne(ctx.store, { now: at(10) })).job.id);
      expect(order).toEqual([high, earlier, fifo1, fifo2, low, negative]);
    });

    orderedIt(ctx)('orders jobs of different queues and names as one list', async () => {
      const mail = await enqueueOne(ctx.store, { name: 'mail', queue: 'emails', priority: 1, runAt: at(-100) }, at(1));
      const urgent = await enqueueOne(ctx.store, { name: 'sms', queue: 'texts', priority: 9 }, at(2));
      const older = await enqueueOne(ctx.store, { name: 'sms', queue: 'emails', priority: 1, runAt: at(-200) }, at(3));
      const tie = await enqueueOne(ctx.store, { name: 'send', queue: 'default', priority: 1, runAt: at(-100) }, at(4));
      const opts = { names: ['mail', 'sms', 'send'], queues: ['emails', 'texts', 'default'], now: at(10) };
      const order: string[] = [];
      for (let i = 0; i < 4; i++) order.push((await claimOne(ctx.store, opts)).job.id);
      expect(order).toEqual([urgent, older, mail, tie]);
    });

    orderedIt(ctx)('keeps enqueue order for equal priority and runAt, within and across batches', async () => {
      const batch = await ctx.store.enqueue(
        Array.from({ length: 5 }, (_, i) => newJob({ payload: { i } })),
        { now: at(0) },
      );
      const later = await enqueueOne(ctx.store, {}, at(0));
      expect(idsOf(await claimJobs(ctx.store, { limit: 6, now: at(0) }))).toEqual([...idsOf(batch), later]);
      const oneByOne: string[] = [];
      await ctx.store.enqueue(
        Array.from({ length: 4 }, (_, i) => newJob({ name: 'fifo', payload: { i } })),
        { now: at(1) },
      );
      for (let i = 0; i < 4; i++) {
        const { job } = await claimOne(ctx.store, { names: ['fifo'], now: at(1) });
        oneByOne.push(String((job.payload as { i: number }).i));
      }
      expect(oneByOne).toEqual(['0', '1', '2', '3']);
    });

    it('does not claim a delayed job before its runAt, and claims it at runAt', async () => {
      const id = await enqueueOne(ctx.store, { runAt: at(10_000), priority: 100 });
      const due = await enqueueOne(ctx.store, { runAt: at(0) });
      expect(idsOf(await claimJobs(ctx.store, { now: at(0), limit: 5 }))).toEqual([due]);
      expect(await claimJobs(ctx.store, { now: at(9_999) })).toEqual([]);
      expect(idsOf(await claimJobs(ctx.store, { now: at(10_000) }))).toEqual([id]);
    });

    it('claims only the requested queues and names, and skips excludeNames', async () => {
      const a = await enqueueOne(ctx.store, { name: 'a', queue: 'q1' });
      const b = await enqueueOne(ctx.store, { name: 'b', queue: 'q1' });
      const c = await enqueueOne(ctx.store, { name: 'a', queue: 'q2' });
      expect(await claimJobs(ctx.store, { names: ['a', 'b'], queues: ['q3'], limit: 10 })).toEqual([]);
      expect(await claimJobs(ctx.store, { names: ['z'], queues: ['q1', 'q2'], limit: 10 })).toEqual([]);
      expect(await claimJobs(ctx.store, { names: ['a', 'b'], queues: ['q1'], excludeNames: ['a', 'b'], limit: 10 })).toEqual([]);
      expect(idsOf(await claimJobs(ctx.store, { names: ['a', 'b'], queues: ['q1', 'q2'], excludeNames: ['b'], limit: 10 })).sort()).toEqual([a, c].sort());
      expect(idsOf(await claimJobs(ctx.store, { names: ['a', 'b'], queues: ['q1'], limit: 10 }))).toEqual([b]);
    });

    it('returns at most limit jobs', async () => {
      await ctx.store.enqueue(
        Array.from({ length: 5 }, (_, i) => newJob({ payload: { i } })),
        { now: at(0) },
      );
      expect(await claimJobs(ctx.store, { limit: 2 })).toHaveLength(2);
      expect(await claimJobs(ctx.store, { limit: 10 })).toHaveLength(3);
      expect(await claimJobs(ctx.store, { limit: 10 })).toHaveLength(0);
    });

    it('reclaims a job once its lease has expired: new token, attempt incremented', async () => {
      const { id, job: first } = await enqueueAndClaim(ctx.store, {}, { now: at(0), leaseMs: 1_000, owner: 'dead-worker' });
      expect(await claimJobs(ctx.store, { now: at(1_000) })).toEqual([]);
      const [again] = await claimJobs(ctx.store, { now: at(1_001), owner: 'live-worker', leaseMs: 5_000 });
      expect(again).toMatchObject({ id, status: 'running', attempt: 2 });
      expect(again.lease).toMatchObject({ owner: 'live-worker', until: at(6_001) });
      expect(again.lease?.token).not.toBe(first.lease?.token);
      expect(await claimJobs(ctx.store, { now: at(1_002) })).toEqual([]);
    });

    it('hands an expired job to exactly one of many concurrent reclaims', async () => {
      const { id } = await enqueueAndClaim(ctx.store, {}, { now: at(0), leaseMs: 1_000 });
      const claims = await Promise.all(Array.from({ length: 10 }, (_, i) => claimJobs(ctx.store, { now: at(2_000), owner: `w${i}` })));
      expect(idsOf(claims.flat())).toEqual([id]);
      expect((await mustGet(ctx.store, id)).attempt).toBe(2);
    });

    it('does not reclaim a job whose lease was extended', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store, {}, { now: at(0), leaseMs: 1_000 });
      await ctx.store.extendLease(lease, at(10_000), at(500));
      expect((await mustGet(ctx.store, id)).lease?.until).toEqual(at(10_000));
      expect(await claimJobs(ctx.store, { now: at(5_000) })).toEqual([]);
      expect(idsOf(await claimJobs(ctx.store, { now: at(10_001) }))).toEqual([id]);
    });

    it('still returns a reclaimed job past maxAttempts (the engine dead-letters it)', async () => {
      const { id } = await enqueueAndClaim(ctx.store, { maxAttempts: 1 }, { now: at(0), leaseMs: 1_000 });
      const [again] = await claimJobs(ctx.store, { now: at(2_000) });
      expect(again).toMatchObject({ id, attempt: 2, maxAttempts: 1, status: 'running' });
    });

    it('keeps a completed job out of later claims', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store, {}, { now: at(0), leaseMs: 1_000 });
      await ctx.store.complete(lease, { now: at(10) });
      expect(await claimJobs(ctx.store, { now: at(999_999) })).toEqual([]);
      expect((await mustGet(ctx.store, id)).status).toBe('completed');
    });
  });
}
