/// <reference types="jest" />
import type { FlowHold, FlowLimits, JobRecord, JobStore, NewJob } from '@loom/core';
import {
  orderedIt,
  at,
  claimJobs,
  expectLeaseLost,
  HEAVY_TEST_MS,
  idsOf,
  LEASE_MS,
  leaseOf,
  mustGet,
  newJob,
  type ClaimOptions,
  type ConformanceContext,
} from './harness.js';

/** A claim with flow limits: the jobs, and what the store reported holding back. */
async function claimFlow(store: JobStore, flow: FlowLimits[], opts: ClaimOptions = {}): Promise<{ jobs: JobRecord[]; holds: FlowHold[] }> {
  const holds: FlowHold[] = [];
  let reports = 0;
  const jobs = await claimJobs(store, {
    limit: 10,
    ...opts,
    flow,
    onHeld: (reported) => {
      reports += 1;
      expect(reported.length).toBeGreaterThan(0);
      holds.push(...reported);
    },
  });
  expect(reports).toBeLessThanOrEqual(1);
  return { jobs, holds };
}

async function enqueueMany(store: JobStore, count: number, overrides: Partial<NewJob> = {}, now = at(0)): Promise<string[]> {
  const results = await store.enqueue(
    Array.from({ length: count }, (_, i) => newJob({ payload: { i }, ...overrides })),
    { now },
  );
  return results.map((r) => r.id);
}

const countBy = (jobs: JobRecord[], field: 'groupKey' | 'rateLimitKey'): Record<string, number> =>
  jobs.reduce<Record<string, number>>((acc, job) => ({ ...acc, [job[field] ?? '']: (acc[job[field] ?? ''] ?? 0) + 1 }), {});

/**
 * Flow limits enforced by the store in the claim. Two stores on the same data (`ctx.peer()`) claim
 * as two engines would: every limit holds across both.
 */
export function describeFlow(ctx: ConformanceContext): void {
  describe('flow control', () => {
    describe('globalConcurrency', () => {
      const flow: FlowLimits[] = [{ name: 'send', globalConcurrency: 2 }];

      it('claims through two stores never lease more than the limit at once; a finished job frees its slot', async () => {
        const peer = await ctx.peer();
        await enqueueMany(ctx.store, 6);
        const first = await claimFlow(ctx.store, flow, { now: at(1), limit: 5 });
        expect(first.jobs).toHaveLength(2);
        expect(first.holds).toEqual([{ name: 'send', by: 'globalConcurrency', until: at(1 + LEASE_MS + 1) }]);
        const second = await claimFlow(peer, flow, { now: at(2), limit: 5, owner: 'worker-b' });
        expect(second.jobs).toEqual([]);
        expect(second.holds).toMatchObject([{ name: 'send', by: 'globalConcurrency' }]);
        await ctx.store.complete(leaseOf(first.jobs[0]), { now: at(3) });
        const third = await claimFlow(peer, flow, { now: at(4), limit: 5, owner: 'worker-b' });
        expect(third.jobs).toHaveLength(1);
      });

      it('concurrent claims through two stores together lease at most the limit', async () => {
        const peer = await ctx.peer();
        await enqueueMany(ctx.store, 30);
        const limits: FlowLimits[] = [{ name: 'send', globalConcurrency: 4 }];
        const claims = await Promise.all(
          Array.from({ length: 12 }, (_, i) => claimFlow(i % 2 === 0 ? ctx.store : peer, limits, { now: at(1), limit: 3, owner: `worker-${i}` })),
        );
        // Claims that lost a race may leave a slot unused for now (never one too many); a later claim fills it.
        const claimed = claims.flatMap((c) => c.jobs);
        expect(claimed.length).toBeLessThanOrEqual(4);
        claimed.push(...(await claimFlow(peer, limits, { now: at(2) })).jobs);
        expect(claimed).toHaveLength(4);
        expect(new Set(idsOf(claimed)).size).toBe(4);
      });

      it('every way a run ends frees its slot: complete, retry, release, sleep, wait, dead letter', async () => {
        const endings: Array<(store: JobStore, job: JobRecord) => Promise<unknown>> = [
          (s, job) => s.complete(leaseOf(job), { now: at(2) }),
          (s, job) => s.retry(leaseOf(job), { runAt: at(60_000), error: { attempt: 1, at: at(2), name: 'Error', message: 'boom' }, now: at(2) }),
          (s, job) => s.release(leaseOf(job), at(2)),
          (s, job) => s.sleep(leaseOf(job), { runAt: at(60_000), now: at(2) }),
          (s, job) => s.wait(leaseOf(job), { for: { signal: 'go' }, now: at(2) }),
          (s, job) => s.deadLetter(leaseOf(job), { reason: 'test', now: at(2) }),
        ];
        const limits: FlowLimits[] = [{ name: 'send', globalConcurrency: 1 }];
        for (const [i, end] of endings.entries()) {
          const name = `send-${i}`;
          await enqueueMany(ctx.store, 1, { name, runAt: at(-10) });
          await enqueueMany(ctx.store, 1, { name });
          const named: FlowLimits[] = [{ ...limits[0], name }];
          const { jobs } = await claimFlow(ctx.store, named, { names: [name], now: at(1) });
          expect(jobs).toHaveLength(1);
          expect((await claimFlow(ctx.store, named, { names: [name], now: at(1) })).jobs).toEqual([]);
          await end(ctx.store, jobs[0]);
          const next = await claimFlow(ctx.store, named, { names: [name], now: at(3) });
          // release gives the same job back at `now`: it may be the one claimed again.
          expect(next.jobs).toHaveLength(1);
        }
      });

      it('completeMany frees the slot of every run it completes, and no slot of a run it found lost', async () => {
        const peer = await ctx.peer();
        await enqueueMany(ctx.store, 8);
        const limits: FlowLimits[] = [{ name: 'send', globalConcurrency: 4 }];
        const { jobs } = await claimFlow(ctx.store, limits, { now: at(1) });
        expect(jobs).toHaveLength(4);
        const [taken, ...kept] = jobs;
        for (const job of kept) await ctx.store.extendLease(leaseOf(job), at(100_000), at(2));
        // `taken`'s lease runs out and worker-b takes it over: its slot is now worker-b's.
        const again = await claimFlow(peer, limits, { now: at(40_000), owner: 'worker-b' });
        expect(idsOf(again.jobs)).toEqual([taken.id]);
        const outcomes = await ctx.store.completeMany(
          jobs.map((job) => ({ lease: leaseOf(job) })),
          at(40_001),
        );
        expect(outcomes).toEqual(['lost', 'completed', 'completed', 'completed']);
        // Three slots free, the fourth still worker-b's.
        const next = await claimFlow(peer, limits, { now: at(40_002), owner: 'worker-b' });
        expect(next.jobs).toHaveLength(3);
        expect(next.holds).toMatchObject([{ name: 'send', by: 'globalConcurrency' }]);
      });

      orderedIt(ctx)('an expired lease frees its slot; a heartbeat keeps it', async () => {
        const peer = await ctx.peer();
        await enqueueMany(ctx.store, 3);
        const limits: FlowLimits[] = [{ name: 'send', globalConcurrency: 1 }];
        const { jobs } = await claimFlow(ctx.store, limits, { now: at(0) });
        expect(jobs).toHaveLength(1);
        await ctx.store.extendLease(leaseOf(jobs[0]), at(50_000), at(20_000));
        expect((await claimFlow(peer, limits, { now: at(40_000), owner: 'worker-b' })).jobs).toEqual([]);
        expect((await claimFlow(peer, limits, { now: at(50_000), owner: 'worker-b' })).jobs).toEqual([]);
        // The lease ended at 50 s and its holder is gone: one job (the same one, reclaimed) runs again.
        const after = await claimFlow(peer, limits, { now: at(50_001), owner: 'worker-b' });
        expect(after.jobs).toHaveLength(1);
        expect(after.jobs[0]).toMatchObject({ id: jobs[0].id, attempt: 2 });
        expect((await claimFlow(ctx.store, limits, { now: at(50_002) })).jobs).toEqual([]);
      });

      orderedIt(ctx)('a heartbeat arriving after the lease ran out is refused: the slot given to another run meanwhile stays with it', async () => {
        const peer = await ctx.peer();
        await enqueueMany(ctx.store, 1);
        const limits: FlowLimits[] = [{ name: 'send', globalConcurrency: 1 }];
        const { jobs } = await claimFlow(ctx.store, limits, { now: at(0) });
        expect(jobs).toHaveLength(1);
        // Its worker stalls past the lease (30 s); a more urgent job of the name takes the free slot.
        await enqueueMany(peer, 1, { priority: 10 });
        const other = await claimFlow(peer, limits, { now: at(30_001), owner: 'worker-b' });
        expect(other.jobs).toHaveLength(1);
        expect(other.jobs[0]!.id).not.toBe(jobs[0]!.id);
        // The stalled worker resumes: its heartbeat must not take the job back over the limit.
        await expectLeaseLost(ctx.store.extendLease(leaseOf(jobs[0]!), at(60_002), at(30_002)));
        expect((await claimFlow(peer, limits, { now: at(30_003), owner: 'worker-c' })).jobs).toEqual([]);
      });

      it('a name at its limit does not hold back other names, and nothing is reported when nothing is due', async () => {
        await enqueueMany(ctx.store, 2, { runAt: at(-10) });
        const mail = (await enqueueMany(ctx.store, 2, { name: 'mail' }))!;
        const limits: FlowLimits[] = [{ name: 'send', globalConcurrency: 1 }];
        const opts = { names: ['send', 'mail'], now: at(1) };
        const first = await claimFlow(ctx.store, limits, opts);
        expect(first.jobs.filter((j) => j.name === 'send')).toHaveLength(1);
        expect(idsOf(first.jobs.filter((j) => j.name === 'mail')).sort()).toEqual([...mail].sort());
        expect(first.holds).toMatchObject([{ name: 'send', by: 'globalConcurrency' }]);
        await ctx.store.complete(leaseOf(first.jobs.find((j) => j.name === 'send')!), { now: at(2) });
        const second = await claimFlow(ctx.store, limits, opts);
        expect(second.jobs).toHaveLength(1);
        const third = await claimFlow(ctx.store, limits, opts);
        expect(third).toEqual({ jobs: [], holds: [] });
      });
    });

    describe('rateLimit', () => {
      it('starts at most `limit` jobs in any window of `perMs`, across two stores', async () => {
        const peer = await ctx.peer();
        await enqueueMany(ctx.store, 12);
        const limits: FlowLimits[] = [{ name: 'send', rateLimit: { limit: 3, perMs: 1_000 } }];
        const started = (await claimFlow(ctx.store, limits, { now: at(0), limit: 2 })).jobs.length;
        const more = await claimFlow(peer, limits, { now: at(100), limit: 5, owner: 'worker-b' });
        expect(started + more.jobs.length).toBe(3);
        // The window opens again when the first start leaves it.
        expect(more.holds).toEqual([{ name: 'send', by: 'rateLimit', until: at(1_000) }]);
        const closed = await claimFlow(ctx.store, limits, { now: at(999) });
        expect(closed.jobs).toEqual([]);
        expect(closed.holds).toEqual([{ name: 'send', by: 'rateLimit', until: at(1_000) }]);
        // At 1000 the two starts of t=0 have left the window; the one of t=100 still counts.
        expect((await claimFlow(peer, limits, { now: at(1_000), owner: 'worker-b' })).jobs).toHaveLength(2);
        const next = await claimFlow(ctx.store, limits, { now: at(1_050) });
        expect(next.jobs).toEqual([]);
        expect(next.holds).toEqual([{ name: 'send', by: 'rateLimit', until: at(1_100) }]);
        expect((await claimFlow(ctx.store, limits, { now: at(1_100) })).jobs).toHaveLength(1);
      });

      it('concurrent claims through two stores start at most `limit` jobs per window', async () => {
        const peer = await ctx.peer();
        await enqueueMany(ctx.store, 40);
        const limits: FlowLimits[] = [{ name: 'send', rateLimit: { limit: 5, perMs: 60_000 } }];
        const claims = await Promise.all(
          Array.from({ length: 12 }, (_, i) => claimFlow(i % 2 === 0 ? ctx.store : peer, limits, { now: at(1), limit: 2, owner: `worker-${i}` })),
        );
        const claimed = claims.flatMap((c) => c.jobs);
        expect(claimed.length).toBeLessThanOrEqual(5);
        claimed.push(...(await claimFlow(ctx.store, limits, { now: at(2) })).jobs);
        expect(claimed).toHaveLength(5);
      });

      it('a claim overtaken by a later one (its `now` is behind) starts nothing: no window ever holds more than `limit` starts', async () => {
        const peer = await ctx.peer();
        await enqueueMany(ctx.store, 6);
        const limits: FlowLimits[] = [{ name: 'send', rateLimit: { limit: 2, perMs: 1_000 } }];
        expect((await claimFlow(ctx.store, limits, { now: at(0), limit: 2 })).jobs).toHaveLength(2);
        // The later claim drops the starts of t=0 from the window and starts one at t=1000...
        expect((await claimFlow(peer, limits, { now: at(1_000), limit: 1, owner: 'worker-b' })).jobs).toHaveLength(1);
        // ...so a claim judged at t=999 must not start one: t=0, 0 and 999 would be three in one window.
        const behind = await claimFlow(ctx.store, limits, { now: at(999), limit: 1 });
        expect(behind).toEqual({ jobs: [], holds: [{ name: 'send', by: 'rateLimit', until: at(1_000) }] });
        expect((await claimFlow(ctx.store, limits, { now: at(1_000), limit: 5 })).jobs).toHaveLength(1);
        const starts = (await ctx.store.listJobs({ status: ['running'] })).map((j) => j.startedAt!.getTime()).sort((a, b) => a - b);
        expect(starts).toEqual([0, 0, 1_000, 1_000].map((ms) => at(ms).getTime()));
      });

      orderedIt(ctx)('a job held back is left as it was: no attempt spent, no start time, its debounce key kept', async () => {
        const limits: FlowLimits[] = [{ name: 'send', rateLimit: { limit: 1, perMs: 1_000 } }];
        await enqueueMany(ctx.store, 1, { runAt: at(-10) });
        const [held] = await ctx.store.enqueue([newJob({ payload: { v: 1 }, debounceKey: 'k' })], { now: at(0) });
        expect((await claimFlow(ctx.store, limits, { now: at(1), limit: 1 })).jobs).toHaveLength(1);
        for (const limit of [1, 5]) {
          const refused = await claimFlow(ctx.store, limits, { now: at(2), limit });
          expect(refused).toEqual({ jobs: [], holds: [{ name: 'send', by: 'rateLimit', until: at(1_001) }] });
        }
        const job = await mustGet(ctx.store, held.id);
        expect(job).toMatchObject({ status: 'queued', attempt: 0, debounceKey: 'k' });
        expect(job.startedAt).toBeUndefined();
        expect(job.lease).toBeUndefined();
        const [again] = await ctx.store.enqueue([newJob({ payload: { v: 2 }, debounceKey: 'k' })], { now: at(3) });
        expect(again).toMatchObject({ id: held.id, debounced: true });
      });

      orderedIt(ctx)('a keyed rate limit counts each key on its own', async () => {
        await enqueueMany(ctx.store, 3, { rateLimitKey: 'tenant-a' });
        await enqueueMany(ctx.store, 1, { rateLimitKey: 'tenant-b' });
        const limits: FlowLimits[] = [{ name: 'send', rateLimit: { limit: 1, perMs: 1_000, keyed: true } }];
        const first = await claimFlow(ctx.store, limits, { now: at(0) });
        expect(countBy(first.jobs, 'rateLimitKey')).toEqual({ 'tenant-a': 1, 'tenant-b': 1 });
        expect(first.holds).toContainEqual({ name: 'send', key: 'tenant-a', by: 'rateLimit', until: at(1_000) });
        expect(first.holds.filter((h) => h.key === 'tenant-b' || h.key === undefined)).toEqual([]);
        expect((await claimFlow(ctx.store, limits, { now: at(1_000) })).jobs).toHaveLength(1);
      });

      orderedIt(ctx)("with a group too, each rate-limit key of a group's jobs counts on its own; the group's jobs start in claim order", async () => {
        // One group, jobs of rate-limit keys x, x, y, y in claim order; one start per key per window.
        for (const [i, key] of ['x', 'x', 'y', 'y'].entries()) await enqueueMany(ctx.store, 1, { groupKey: 'g', rateLimitKey: key, priority: 10 - i });
        const limits: FlowLimits[] = [{ name: 'send', group: { concurrency: 5 }, rateLimit: { limit: 1, perMs: 1_000, keyed: true } }];
        const first = await claimFlow(ctx.store, limits, { now: at(0) });
        // x's first job starts; x's second has no room, and the jobs behind it wait their turn.
        expect(first.jobs.map((job) => [job.rateLimitKey, job.priority])).toEqual([['x', 10]]);
        expect(first.holds).toContainEqual({ name: 'send', key: 'x', by: 'rateLimit', until: at(1_000) });
        // y's start was not spent: after x's window, x and y each start one more.
        const second = await claimFlow(ctx.store, limits, { now: at(1_000) });
        expect(countBy(second.jobs, 'rateLimitKey')).toEqual({ x: 1, y: 1 });
      });

      it('with globalConcurrency too, a start needs both a slot and room in the window', async () => {
        await enqueueMany(ctx.store, 10);
        const limits: FlowLimits[] = [{ name: 'send', globalConcurrency: 2, rateLimit: { limit: 3, perMs: 1_000 } }];
        const first = await claimFlow(ctx.store, limits, { now: at(0) });
        expect(first.jobs).toHaveLength(2);
        await ctx.store.complete(leaseOf(first.jobs[0]), { now: at(1) });
        await ctx.store.complete(leaseOf(first.jobs[1]), { now: at(1) });
        expect((await claimFlow(ctx.store, limits, { now: at(2) })).jobs).toHaveLength(1);
      });
    });

    describe('holdFlow', () => {
      it('no job of a held name starts through any store until the hold ends; a shorter hold changes nothing', async () => {
        const peer = await ctx.peer();
        await enqueueMany(ctx.store, 2);
        await ctx.store.holdFlow({ name: 'send', until: at(30_000), now: at(0) });
        await peer.holdFlow({ name: 'send', until: at(10_000), now: at(1) });
        expect(await peer.flowHolds(at(2))).toEqual([{ name: 'send', until: at(30_000) }]);
        const held = await claimFlow(peer, [{ name: 'send' }], { now: at(29_999), owner: 'worker-b' });
        expect(held).toEqual({ jobs: [], holds: [{ name: 'send', by: 'rateLimit', until: at(30_000) }] });
        expect((await claimFlow(ctx.store, [{ name: 'send', globalConcurrency: 5 }], { now: at(20_000) })).jobs).toEqual([]);
        expect(await ctx.store.flowHolds(at(30_000))).toEqual([]);
        expect((await claimFlow(peer, [{ name: 'send' }], { now: at(30_000), owner: 'worker-b' })).jobs).toHaveLength(2);
      });

      it('holds a name whose only limits are per key (group, keyed rate limit) too', async () => {
        await enqueueMany(ctx.store, 2, { groupKey: 'a', rateLimitKey: 'a' });
        await enqueueMany(ctx.store, 2, { groupKey: 'b', rateLimitKey: 'b' });
        await ctx.store.holdFlow({ name: 'send', until: at(30_000), now: at(0) });
        const keyedOnly: FlowLimits[][] = [
          [{ name: 'send', group: { concurrency: 1 } }],
          [{ name: 'send', rateLimit: { limit: 1, perMs: 60_000, keyed: true } }],
        ];
        for (const limits of keyedOnly) {
          expect(await claimFlow(ctx.store, limits, { now: at(29_999) })).toEqual({ jobs: [], holds: [{ name: 'send', by: 'rateLimit', until: at(30_000) }] });
        }
        // The hold over, one job of each key starts; the keys are then full (and reported so).
        const open = await claimFlow(ctx.store, keyedOnly[0], { now: at(30_000) });
        expect(countBy(open.jobs, 'groupKey')).toEqual({ a: 1, b: 1 });
        expect(open.holds).toHaveLength(2);
        expect(open.holds).toEqual(
          expect.arrayContaining([
            expect.objectContaining({ name: 'send', key: 'a', by: 'group' }),
            expect.objectContaining({ name: 'send', key: 'b', by: 'group' }),
          ]),
        );
      });

      it('a hold on one rate-limit key holds only that key', async () => {
        const [a] = await enqueueMany(ctx.store, 1, { rateLimitKey: 'a' });
        const [b] = await enqueueMany(ctx.store, 1, { rateLimitKey: 'b' });
        await ctx.store.holdFlow({ name: 'send', key: 'a', until: at(5_000), now: at(0) });
        expect(await ctx.store.flowHolds(at(1))).toEqual([{ name: 'send', key: 'a', until: at(5_000) }]);
        const limits: FlowLimits[] = [{ name: 'send', rateLimit: { limit: 10, perMs: 1_000, keyed: true } }];
        const first = await claimFlow(ctx.store, limits, { now: at(1) });
        expect(idsOf(first.jobs)).toEqual([b]);
        expect(first.holds).toEqual([{ name: 'send', key: 'a', by: 'rateLimit', until: at(5_000) }]);
        expect(idsOf((await claimFlow(ctx.store, limits, { now: at(5_000) })).jobs)).toEqual([a]);
      });

      it('refuses a malformed hold and changes nothing', async () => {
        await expect(ctx.store.holdFlow({ name: { $ne: null } as unknown as string, until: at(1), now: at(0) })).rejects.toMatchObject({
          code: 'INVALID_ARGUMENT',
        });
        await expect(ctx.store.holdFlow({ name: 'send', until: 'soon' as unknown as Date, now: at(0) })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
        expect(await ctx.store.flowHolds(at(0))).toEqual([]);
      });
    });

    describe('group', () => {
      const limits = (concurrency: number): FlowLimits[] => [{ name: 'send', group: { concurrency } }];

      it('runs at most `concurrency` jobs per key at once across two stores; a key at its limit holds back no other key', async () => {
        const peer = await ctx.peer();
        await enqueueMany(ctx.store, 5, { groupKey: 'a' });
        await enqueueMany(ctx.store, 5, { groupKey: 'b' });
        const first = await claimFlow(ctx.store, limits(2), { now: at(1) });
        expect(countBy(first.jobs, 'groupKey')).toEqual({ a: 2, b: 2 });
        const second = await claimFlow(peer, limits(2), { now: at(2), owner: 'worker-b' });
        expect(second.jobs).toEqual([]);
        expect(second.holds.map((h) => [h.key, h.by]).sort()).toEqual([
          ['a', 'group'],
          ['b', 'group'],
        ]);
        await ctx.store.complete(leaseOf(first.jobs.find((j) => j.groupKey === 'b')!), { now: at(3) });
        expect(countBy((await claimFlow(peer, limits(2), { now: at(4), owner: 'worker-b' })).jobs, 'groupKey')).toEqual({ b: 1 });
      });

      it('concurrent claims through two stores run at most `concurrency` per key', async () => {
        const peer = await ctx.peer();
        for (const key of ['a', 'b', 'c']) await enqueueMany(ctx.store, 8, { groupKey: key });
        const claims = await Promise.all(
          Array.from({ length: 10 }, (_, i) => claimFlow(i % 2 === 0 ? ctx.store : peer, limits(2), { now: at(1), limit: 3, owner: `worker-${i}` })),
        );
        const claimed = claims.flatMap((c) => c.jobs);
        for (const count of Object.values(countBy(claimed, 'groupKey'))) expect(count).toBeLessThanOrEqual(2);
        claimed.push(...(await claimFlow(peer, limits(2), { now: at(2) })).jobs);
        expect(countBy(claimed, 'groupKey')).toEqual({ a: 2, b: 2, c: 2 });
      });

      orderedIt(ctx)(
        'serves a key with one job within the next claims, however many jobs another key has queued',
        async () => {
          await enqueueMany(ctx.store, 1_000, { groupKey: 'big', runAt: at(-60_000) });
          const [small] = await enqueueMany(ctx.store, 1, { groupKey: 'small' }, at(1));
          const served: JobRecord[] = [];
          for (let i = 0; i < 2; i++) served.push(...(await claimFlow(ctx.store, limits(100), { now: at(2), limit: 1 })).jobs);
          expect(idsOf(served)).toContain(small);
        },
        HEAVY_TEST_MS,
      ); // 1,000 inserts: well past jest's 30 s on a loaded machine's emulator

      it('a claim with room for more goes on to the next keys when a key is at its limit', async () => {
        await enqueueMany(ctx.store, 50, { groupKey: 'big', runAt: at(-60_000) });
        await enqueueMany(ctx.store, 1, { groupKey: 'one' }, at(1));
        await enqueueMany(ctx.store, 1, { groupKey: 'two' }, at(2));
        const { jobs } = await claimFlow(ctx.store, limits(1), { now: at(3), limit: 10 });
        expect(countBy(jobs, 'groupKey')).toEqual({ big: 1, one: 1, two: 1 });
      });

      orderedIt(ctx)('keys take turns from claim to claim: every key with jobs is served before a key is served again', async () => {
        for (const key of ['k1', 'k2', 'k3', 'k4']) await enqueueMany(ctx.store, 5, { groupKey: key });
        const served: string[] = [];
        for (let i = 0; i < 8; i++) served.push(...(await claimFlow(ctx.store, limits(100), { now: at(1), limit: 1 })).jobs.map((j) => j.groupKey!));
        expect(new Set(served.slice(0, 4)).size).toBe(4);
        expect(new Set(served.slice(4, 8)).size).toBe(4);
      });

      it("an expired lease frees its key's slot", async () => {
        await enqueueMany(ctx.store, 2, { groupKey: 'a' });
        const [job] = (await claimFlow(ctx.store, limits(1), { now: at(0) })).jobs;
        expect((await claimFlow(ctx.store, limits(1), { now: at(LEASE_MS) })).jobs).toEqual([]);
        const after = (await claimFlow(ctx.store, limits(1), { now: at(LEASE_MS + 1) })).jobs;
        expect(after).toHaveLength(1);
        expect(await mustGet(ctx.store, job.id)).toMatchObject({ status: 'running' });
      });

      it('with globalConcurrency too, both limits hold', async () => {
        for (const key of ['a', 'b', 'c']) await enqueueMany(ctx.store, 3, { groupKey: key });
        const both: FlowLimits[] = [{ name: 'send', globalConcurrency: 3, group: { concurrency: 2 } }];
        const { jobs } = await claimFlow(ctx.store, both, { now: at(1) });
        expect(jobs).toHaveLength(3);
        expect(Math.max(...Object.values(countBy(jobs, 'groupKey')))).toBeLessThanOrEqual(2);
      });
    });

    describe('debounce', () => {
      const debounced = (payload: unknown, runAtMs: number, overrides: Partial<NewJob> = {}): NewJob =>
        newJob({ payload, runAt: at(runAtMs), debounceKey: 'reindex:doc-1', ...overrides });

      it('an enqueue with the key of a queued job updates it and returns its id: five enqueues, one job with the last payload', async () => {
        const [first] = await ctx.store.enqueue([debounced({ v: 1 }, 5_000)], { now: at(0) });
        expect(first).toEqual({ id: first.id, deduplicated: false });
        for (let v = 2; v <= 5; v++) {
          const [again] = await ctx.store.enqueue([debounced({ v }, 5_000 + v * 1_000, { priority: v, groupKey: `g${v}` })], { now: at(v * 1_000) });
          expect(again).toEqual({ id: first.id, deduplicated: false, debounced: true });
        }
        expect(await ctx.store.listJobs({ status: ['queued'] })).toHaveLength(1);
        expect(await mustGet(ctx.store, first.id)).toMatchObject({
          payload: { v: 5 },
          runAt: at(10_000),
          priority: 5,
          groupKey: 'g5',
          createdAt: at(0),
          updatedAt: at(5_000),
          attempt: 0,
        });
        expect(await claimJobs(ctx.store, { now: at(9_999) })).toEqual([]);
        const [job] = await claimJobs(ctx.store, { now: at(10_000) });
        expect(job).toMatchObject({ id: first.id, payload: { v: 5 } });
        expect(job.debounceKey).toBeUndefined();
      });

      it('a job that started or was cancelled no longer takes its key: the next enqueue makes a new job', async () => {
        const [started] = await ctx.store.enqueue([debounced({ v: 1 }, 0)], { now: at(0) });
        expect(idsOf(await claimJobs(ctx.store, { now: at(1) }))).toEqual([started.id]);
        const [next] = await ctx.store.enqueue([debounced({ v: 2 }, 5_000)], { now: at(2) });
        expect(next).toEqual({ id: next.id, deduplicated: false });
        expect(next.id).not.toBe(started.id);
        expect(await ctx.store.cancelJob(next.id, { now: at(3) })).toMatchObject({ outcome: 'cancelled' });
        const [third] = await ctx.store.enqueue([debounced({ v: 3 }, 5_000)], { now: at(4) });
        expect([started.id, next.id]).not.toContain(third.id);
        expect((await mustGet(ctx.store, next.id)).debounceKey).toBeUndefined();
      });

      it('within one batch, a later job with the key updates the earlier one; other keys and jobs without one are added', async () => {
        const results = await ctx.store.enqueue(
          [debounced({ v: 1 }, 1_000), newJob({ payload: { plain: true } }), debounced({ v: 2 }, 2_000), debounced({ v: 9 }, 1_000, { debounceKey: 'other' })],
          { now: at(0) },
        );
        expect(results.map((r) => r.debounced === true)).toEqual([false, false, true, false]);
        expect(results[2].id).toBe(results[0].id);
        expect(new Set(idsOf(results)).size).toBe(3);
        expect((await mustGet(ctx.store, results[0].id)).payload).toEqual({ v: 2 });
      });

      it('concurrent enqueues of one key through two stores leave one queued job', async () => {
        const peer = await ctx.peer();
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, v) => (v % 2 === 0 ? ctx.store : peer).enqueue([debounced({ v }, 5_000)], { now: at(v) })),
        );
        expect(new Set(results.map(([r]) => r.id)).size).toBe(1);
        expect(results.filter(([r]) => r.debounced !== true)).toHaveLength(1);
        expect(await ctx.store.listJobs({ status: ['queued'] })).toHaveLength(1);
      });

      it('refuses a job with both a debounceKey and an idempotencyKey, storing nothing', async () => {
        await expect(ctx.store.enqueue([debounced({ v: 1 }, 0, { idempotencyKey: 'k' })], { now: at(0) })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
        expect(await ctx.store.listJobs({})).toEqual([]);
      });
    });

    it('pages asked for with `now` say what holds back each due queued job (heldBy)', async () => {
      const q = { queue: 'flow' };
      const limits: FlowLimits[] = [
        { name: 'conc', globalConcurrency: 1 },
        { name: 'rated', rateLimit: { limit: 1, perMs: 60_000 } },
        { name: 'grouped', group: { concurrency: 1 } },
        { name: 'held' },
      ];
      const ids = {
        conc: await enqueueMany(ctx.store, 2, { ...q, name: 'conc' }),
        rated: await enqueueMany(ctx.store, 2, { ...q, name: 'rated' }),
        groupA: await enqueueMany(ctx.store, 2, { ...q, name: 'grouped', groupKey: 'a', runAt: at(-10) }),
        groupB: await enqueueMany(ctx.store, 1, { ...q, name: 'grouped', groupKey: 'b' }),
        held: await enqueueMany(ctx.store, 1, { ...q, name: 'held' }),
        later: await enqueueMany(ctx.store, 1, { ...q, name: 'conc', runAt: at(60_000) }),
        paused: await enqueueMany(ctx.store, 1, { queue: 'paused-queue', name: 'conc' }),
      };
      await ctx.store.holdFlow({ name: 'held', until: at(60_000), now: at(0) });
      await ctx.store.setQueuePaused('paused-queue', true, at(0));
      for (const name of ['conc', 'rated'])
        expect(await claimFlow(ctx.store, limits, { queues: ['flow'], names: [name], now: at(1), limit: 1 })).toMatchObject({ jobs: [{ name }] });
      // Room for two: one job of each key starts (a key at its limit holds back no other key), in any partition order.
      expect((await claimFlow(ctx.store, limits, { queues: ['flow'], names: ['grouped'], now: at(1), limit: 2 })).jobs.map((j) => j.groupKey).sort()).toEqual([
        'a',
        'b',
      ]);
      const page = await ctx.store.listJobPage({ statuses: ['queued'], limit: 50, now: at(2) });
      const heldBy = Object.fromEntries(page.map((job) => [job.id, job.heldBy ?? null]));
      const waiting = (group: string[]): string => group.find((id) => page.some((j) => j.id === id))!;
      expect(heldBy[waiting(ids.conc)]).toBe('globalConcurrency');
      expect(heldBy[waiting(ids.rated)]).toBe('rateLimit');
      expect(heldBy[waiting(ids.groupA)]).toBe('group');
      expect(ids.groupB[0]! in heldBy).toBe(false); // started
      expect(heldBy[ids.held[0]]).toBe('rateLimit');
      expect(heldBy[ids.later[0]]).toBeNull();
      expect(heldBy[ids.paused[0]]).toBe('paused');
      expect((await ctx.store.listJobPage({ statuses: ['queued'], limit: 50 })).filter((j) => j.heldBy !== undefined)).toEqual([]);
    });

    it('flowUsage reports each known limit with its use: running slots, starts in the window, keys in use, holds', async () => {
      const q = { queue: 'flow' };
      await enqueueMany(ctx.store, 3, { ...q, name: 'conc' });
      await enqueueMany(ctx.store, 3, { ...q, name: 'rated' });
      await enqueueMany(ctx.store, 2, { ...q, name: 'grouped', groupKey: 'a' });
      await enqueueMany(ctx.store, 1, { ...q, name: 'grouped', groupKey: 'b' });
      await enqueueMany(ctx.store, 2, { ...q, name: 'keyed', rateLimitKey: 'k1' });
      const limits: FlowLimits[] = [
        { name: 'conc', globalConcurrency: 2 },
        { name: 'rated', rateLimit: { limit: 5, perMs: 10_000 } },
        { name: 'grouped', group: { concurrency: 1 } },
        { name: 'keyed', rateLimit: { limit: 3, perMs: 10_000, keyed: true } },
      ];
      expect(await ctx.store.flowUsage(at(0))).toEqual([]);
      const claimed = await claimFlow(ctx.store, limits, { queues: ['flow'], names: ['conc', 'rated', 'grouped', 'keyed'], now: at(1), limit: 20 });
      expect(claimed.jobs).toHaveLength(2 + 3 + 2 + 2);
      // One conc job ends: its slot is free again.
      await ctx.store.complete(leaseOf(claimed.jobs.find((j) => j.name === 'conc')!), { now: at(2) });
      await ctx.store.holdFlow({ name: 'rated', until: at(60_000), now: at(2) });
      expect(await ctx.store.flowUsage(at(3))).toEqual([
        { name: 'conc', kind: 'globalConcurrency', limit: 2, used: 1 },
        { name: 'grouped', key: 'a', kind: 'group', limit: 1, used: 1 },
        { name: 'grouped', key: 'b', kind: 'group', limit: 1, used: 1 },
        { name: 'keyed', key: 'k1', kind: 'rateLimit', limit: 3, perMs: 10_000, used: 2 },
        { name: 'rated', kind: 'rateLimit', limit: 5, perMs: 10_000, used: 3, heldUntil: at(60_000) },
      ]);
      // Once the window has passed and the leases have run out, only the names' own limits are left.
      const later = at(LEASE_MS + 20_000);
      expect(await ctx.store.flowUsage(later)).toEqual([
        { name: 'conc', kind: 'globalConcurrency', limit: 2, used: 0 },
        { name: 'rated', kind: 'rateLimit', limit: 5, perMs: 10_000, used: 0, heldUntil: at(60_000) },
      ]);
      await expect(ctx.store.flowUsage('now' as unknown as Date)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    });

    it('refuses malformed flow limits, claiming nothing', async () => {
      await enqueueMany(ctx.store, 1);
      const bad: unknown[] = [
        'send',
        [{ name: 'send', globalConcurrency: 0 }],
        [{ name: 'send', rateLimit: { limit: 1, perMs: 0 } }],
        [{ name: 'send', group: { concurrency: 1.5 } }],
        [{ name: { $gt: '' } }],
      ];
      for (const flow of bad) {
        await expect(claimJobs(ctx.store, { now: at(1), flow: flow as FlowLimits[] })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      }
      expect((await claimJobs(ctx.store, { now: at(1) })).length).toBe(1);
    });
  });
}
