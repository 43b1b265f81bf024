/// <reference types="jest" />
import { JOB_STATUSES, LoomError, type JobPageQuery, type JobStatus, type JobSummary } from '@loom/core';
import { FENCED_OPERATIONS } from './fencing.js';
import { at, claimJobs, claimOne, enqueueAndClaim, enqueueOne, expectLeaseLost, idsOf, leaseOf, mustGet, newJob, type ConformanceContext } from './harness.js';
import { sampleError } from './transitions.js';

/** A page query over every status, newest first. */
const page = (query: Partial<JobPageQuery> = {}): JobPageQuery => ({ statuses: [...JOB_STATUSES], limit: 100, ...query });

/** Rejects with a Loom error of `code`. */
async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toMatchObject({ code });
  expect(LoomError.is(error)).toBe(true);
}

export function describeOperations(ctx: ConformanceContext): void {
  /** One job in every status, created at distinct times (oldest first in the returned ids). */
  async function oneOfEach(): Promise<Record<JobStatus, string>> {
    const queued = await enqueueOne(ctx.store, { name: 'q' }, at(1));
    const running = await enqueueAndClaim(ctx.store, { name: 'r', queue: 'mail' }, { now: at(2) });
    const waiting = await enqueueAndClaim(ctx.store, { name: 'w' }, { now: at(3) });
    await ctx.store.wait(waiting.lease, { for: { signal: 'go' }, now: at(3) });
    const completed = await enqueueAndClaim(ctx.store, { name: 'c' }, { now: at(4) });
    await ctx.store.complete(completed.lease, { now: at(4) });
    const dead = await enqueueAndClaim(ctx.store, { name: 'd', queue: 'mail' }, { now: at(5) });
    await ctx.store.deadLetter(dead.lease, { reason: 'boom', error: sampleError(1), now: at(5) });
    const cancelled = await enqueueOne(ctx.store, { name: 'x' }, at(6));
    await ctx.store.cancelJob(cancelled, { now: at(6) });
    return { queued, running: running.id, waiting: waiting.id, completed: completed.id, dead: dead.id, cancelled };
  }

  describe('listJobPage', () => {
    it('lists jobs of every status, dead ones included, newest first, as summaries', async () => {
      const ids = await oneOfEach();
      const jobs = await ctx.store.listJobPage(page());
      expect(idsOf(jobs)).toEqual([ids.cancelled, ids.dead, ids.completed, ids.waiting, ids.running, ids.queued]);
      expect(jobs.map((j) => j.status)).toEqual(['cancelled', 'dead', 'completed', 'waiting', 'running', 'queued']);
      const dead = jobs.find((j) => j.id === ids.dead)!;
      expect(dead).toMatchObject({ name: 'd', queue: 'mail', deadReason: 'boom', attempt: 1, maxAttempts: 3, createdAt: at(5), finishedAt: at(5) });
      for (const job of jobs) expect(job).not.toHaveProperty('payload');
    });

    it('filters by statuses, name, queue and creation time', async () => {
      const ids = await oneOfEach();
      expect(idsOf(await ctx.store.listJobPage(page({ statuses: ['dead', 'queued'] })))).toEqual([ids.dead, ids.queued]);
      expect(idsOf(await ctx.store.listJobPage(page({ statuses: ['dead'] })))).toEqual([ids.dead]);
      expect(idsOf(await ctx.store.listJobPage(page({ name: 'c' })))).toEqual([ids.completed]);
      expect(idsOf(await ctx.store.listJobPage(page({ queue: 'mail' })))).toEqual([ids.dead, ids.running]);
      expect(idsOf(await ctx.store.listJobPage(page({ queue: 'mail', statuses: ['running'] })))).toEqual([ids.running]);
      expect(idsOf(await ctx.store.listJobPage(page({ createdAfter: at(2), createdBefore: at(5) })))).toEqual([ids.completed, ids.waiting]);
      expect(await ctx.store.listJobPage(page({ name: 'nothing' }))).toEqual([]);
    });

    it('pages with a keyset: every job exactly once, in order, also across jobs created in the same instant', async () => {
      const created: string[] = [];
      for (let i = 0; i < 7; i++) created.push(await enqueueOne(ctx.store, { payload: { i } }, at(Math.floor(i / 3))));
      const dead = await enqueueAndClaim(ctx.store, { name: 'dies' }, { now: at(1) });
      await ctx.store.deadLetter(dead.lease, { reason: 'x', now: at(9) });
      const all = await ctx.store.listJobPage(page());
      expect(all).toHaveLength(8);
      const order = (a: JobSummary, b: JobSummary) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id > b.id ? -1 : a.id < b.id ? 1 : 0);
      expect(idsOf(all)).toEqual(idsOf([...all].sort(order)));
      const seen: string[] = [];
      let after: JobPageQuery['after'];
      for (let round = 0; round < 10; round++) {
        const jobs = await ctx.store.listJobPage(page({ limit: 3, after }));
        seen.push(...idsOf(jobs));
        if (jobs.length < 3) break;
        const last = jobs[jobs.length - 1];
        after = { createdAt: last.createdAt, id: last.id };
      }
      expect(seen).toEqual(idsOf(all));
    });

    it('refuses an operator object where a plain value belongs', async () => {
      await enqueueOne(ctx.store);
      const smuggled = { $ne: 'nothing' } as unknown as string;
      await expectCode(ctx.store.listJobPage(page({ name: smuggled })), 'INVALID_ARGUMENT');
      await expectCode(ctx.store.listJobPage(page({ queue: smuggled })), 'INVALID_ARGUMENT');
      await expectCode(ctx.store.listJobPage(page({ idempotencyKey: smuggled })), 'INVALID_ARGUMENT');
    });

    it('finds a job by idempotency key, live or dead', async () => {
      const live = await enqueueOne(ctx.store, { idempotencyKey: 'order-1' }, at(1));
      await enqueueOne(ctx.store, { idempotencyKey: 'order-2' }, at(2));
      const dead = await enqueueAndClaim(ctx.store, { idempotencyKey: 'order-3', name: 'd' }, { now: at(3) });
      await ctx.store.deadLetter(dead.lease, { reason: 'boom', now: at(3) });
      expect(idsOf(await ctx.store.listJobPage(page({ idempotencyKey: 'order-1' })))).toEqual([live]);
      expect(await ctx.store.listJobPage(page({ idempotencyKey: 'order-3' }))).toMatchObject([{ id: dead.id, status: 'dead', idempotencyKey: 'order-3' }]);
      expect(await ctx.store.listJobPage(page({ idempotencyKey: 'order-3', statuses: ['queued'] }))).toEqual([]);
      expect(await ctx.store.listJobPage(page({ idempotencyKey: 'order-9' }))).toEqual([]);
    });

    it('finds jobs by equality on payload fields (nested paths, arrays, null), live and dead', async () => {
      const a = await enqueueOne(ctx.store, { payload: { orderId: 'o1', n: 5, vip: true, customer: { tier: 'gold' }, tags: ['x', 'y'] } }, at(1));
      const b = await enqueueOne(ctx.store, { payload: { orderId: 'o2', n: 6, vip: false, customer: { tier: 'gold' }, note: null } }, at(2));
      const dead = await enqueueAndClaim(ctx.store, { name: 'd', payload: { orderId: 'o3', customer: { tier: 'gold' } } }, { now: at(3) });
      await ctx.store.deadLetter(dead.lease, { reason: 'boom', now: at(3) });
      const find = async (...payload: { path: string; value: string | number | boolean | null }[]) => idsOf(await ctx.store.listJobPage(page({ payload })));
      expect(await find({ path: 'orderId', value: 'o1' })).toEqual([a]);
      expect(await find({ path: 'customer.tier', value: 'gold' })).toEqual([dead.id, b, a]);
      expect(await find({ path: 'customer.tier', value: 'gold' }, { path: 'n', value: 6 })).toEqual([b]);
      expect(await find({ path: 'n', value: '5' })).toEqual([]);
      expect(await find({ path: 'vip', value: false })).toEqual([b]);
      expect(await find({ path: 'tags', value: 'y' })).toEqual([a]);
      expect(await find({ path: 'orderId', value: 'o3' })).toEqual([dead.id]);
      // null matches a null field and a missing one, as in MongoDB.
      expect(await find({ path: 'note', value: null })).toEqual([dead.id, b, a]);
      expect(await find({ path: 'orderId', value: 'o1' }, { path: 'orderId', value: 'o2' })).toEqual([]);
    });

    it('refuses payload conditions that are not a field path and a primitive value', async () => {
      await enqueueOne(ctx.store, { payload: { a: 1 } });
      const bad = [
        { path: '$where', value: 'x' },
        { path: 'a.$ne', value: 1 },
        { path: 'a..b', value: 1 },
        { path: '', value: 1 },
        { path: 'a', value: { $gt: 0 } },
        { path: 'a', value: [1] },
        { path: 'a', value: Number.NaN },
      ];
      for (const match of bad) await expectCode(ctx.store.listJobPage(page({ payload: [match] as JobPageQuery['payload'] })), 'INVALID_ARGUMENT');
    });
  });

  describe('cancelJob', () => {
    it('cancels a queued job at once: never claimed, kept with its reason, counted', async () => {
      const id = await enqueueOne(ctx.store, { idempotencyKey: 'order-1' });
      const result = await ctx.store.cancelJob(id, { reason: 'customer asked', now: at(10) });
      expect(result).toMatchObject({ outcome: 'cancelled', job: { id, status: 'cancelled', cancelReason: 'customer asked', finishedAt: at(10) } });
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'cancelled', cancelReason: 'customer asked', finishedAt: at(10) });
      expect(await claimJobs(ctx.store, { now: at(999_999) })).toEqual([]);
      expect((await ctx.store.stats()).queues.default).toMatchObject({ cancelled: 1 });
      // Its key stays taken while it is kept, as a completed job's would.
      const [again] = await ctx.store.enqueue([newJob({ idempotencyKey: 'order-1' })], { now: at(11) });
      expect(again).toEqual({ id, deduplicated: true });
    });

    it('cancels a waiting job at once; a signal no longer reaches it', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      await ctx.store.wait(lease, { for: { signal: 'approve' }, timeoutAt: at(60_000), now: at(1) });
      expect(await ctx.store.cancelJob(id, { now: at(2) })).toMatchObject({ outcome: 'cancelled', job: { status: 'cancelled' } });
      expect(await ctx.store.signal(id, { name: 'approve', data: 1, now: at(3) })).toBe(false);
      expect(await claimJobs(ctx.store, { now: at(60_001) })).toEqual([]);
    });

    it('flags a running job: the lease extension reports it, every other write of the run is refused, completeCancel ends it', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store, {}, { now: at(0) });
      expect(await ctx.store.extendLease(lease, at(40_000), at(10_000))).toBe('extended');
      const result = await ctx.store.cancelJob(id, { reason: 'stop', now: at(11_000) });
      expect(result).toMatchObject({ outcome: 'requested', job: { id, status: 'running', cancelRequestedAt: at(11_000), cancelReason: 'stop' } });
      // A second cancel changes nothing and says so.
      expect(await ctx.store.cancelJob(id, { now: at(11_500) })).toMatchObject({ outcome: 'requested', job: { cancelRequestedAt: at(11_000) } });
      expect(await ctx.store.extendLease(lease, at(50_000), at(20_000))).toBe('cancel-requested');
      expect((await mustGet(ctx.store, id)).lease?.until).toEqual(at(50_000));
      await ctx.store.completeCancel(lease, at(21_000));
      const job = await mustGet(ctx.store, id);
      expect(job).toMatchObject({ status: 'cancelled', cancelReason: 'stop', finishedAt: at(21_000) });
      expect(job.lease).toBeUndefined();
      await expectLeaseLost(ctx.store.completeCancel(lease, at(22_000)));
      expect(await claimJobs(ctx.store, { now: at(999_999) })).toEqual([]);
    });

    for (const [name, operation] of FENCED_OPERATIONS.filter(([n]) => n !== 'extendLease')) {
      it(`${name}: refused with CANCELLED after a cancel request, changing nothing`, async () => {
        const { id, lease } = await enqueueAndClaim(ctx.store);
        await ctx.store.signal(id, { name: 'go', data: 1, now: at(1) });
        await ctx.store.cancelJob(id, { now: at(2) });
        const before = await mustGet(ctx.store, id);
        await expectCode(operation(ctx.store, lease, at(1_500)), 'CANCELLED');
        expect(await mustGet(ctx.store, id)).toEqual(before);
      });
    }

    it('cancels a running job whose lease has expired at once, and refuses its old holder', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store, {}, { now: at(0), leaseMs: 1_000 });
      expect(await ctx.store.cancelJob(id, { now: at(5_000) })).toMatchObject({ outcome: 'cancelled', job: { status: 'cancelled' } });
      await expectLeaseLost(ctx.store.complete(lease, { now: at(5_001) }));
      expect((await mustGet(ctx.store, id)).status).toBe('cancelled');
    });

    it('hands a reclaim of a cancel-requested job (its holder died) to the next claim, which ends it cancelled', async () => {
      const { id } = await enqueueAndClaim(ctx.store, {}, { now: at(0), leaseMs: 1_000 });
      await ctx.store.cancelJob(id, { reason: 'stop', now: at(500) });
      const [again] = await claimJobs(ctx.store, { now: at(2_000), owner: 'worker-b' });
      expect(again).toMatchObject({ id, status: 'running', cancelRequestedAt: at(500), cancelReason: 'stop' });
      await ctx.store.completeCancel(leaseOf(again), at(2_001));
      expect((await mustGet(ctx.store, id)).status).toBe('cancelled');
    });

    it('leaves finished jobs unchanged and returns null for an unknown id', async () => {
      const ids = await oneOfEach();
      for (const status of ['completed', 'dead', 'cancelled'] as const) {
        const before = await mustGet(ctx.store, ids[status]);
        expect(await ctx.store.cancelJob(ids[status], { now: at(100) })).toMatchObject({ outcome: 'unchanged', job: { id: ids[status], status } });
        expect(await mustGet(ctx.store, ids[status])).toEqual(before);
      }
      expect(await ctx.store.cancelJob('no-such-job', { now: at(100) })).toBeNull();
      await expectCode(ctx.store.cancelJob({ $ne: null } as unknown as string, { now: at(100) }), 'INVALID_ARGUMENT');
    });

    it('never lets a cancel and a claim racing for one job both win', async () => {
      const id = await enqueueOne(ctx.store);
      const [cancel, claimed] = await Promise.all([ctx.store.cancelJob(id, { now: at(1) }), claimJobs(ctx.store, { now: at(1) })]);
      if (claimed.length === 1) {
        expect(cancel!.outcome).toBe('requested');
        await expectCode(ctx.store.complete(leaseOf(claimed[0]), { now: at(2) }), 'CANCELLED');
      } else {
        expect(cancel!.outcome).toBe('cancelled');
      }
    });
  });

  describe('retryJob', () => {
    it('puts a cancelled job back: same id, queued now, attempts reset (added to priorAttempts), steps kept', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const charged = { name: 'charge', kind: 'step' as const, status: 'completed' as const, result: 'c1', at: at(1) };
      await ctx.store.recordStep(lease, charged, at(1));
      await ctx.store.cancelJob(id, { reason: 'oops', now: at(2) });
      await ctx.store.completeCancel(lease, at(3));
      expect(await ctx.store.retryJob(id, at(10))).toEqual({ outcome: 'retried', status: 'queued' });
      const job = await mustGet(ctx.store, id);
      expect(job).toMatchObject({ status: 'queued', attempt: 0, priorAttempts: 1, runAt: at(10), steps: [charged] });
      expect(job.cancelRequestedAt).toBeUndefined();
      expect(job.cancelReason).toBeUndefined();
      expect(job.finishedAt).toBeUndefined();
      const again = await claimOne(ctx.store, { now: at(10) });
      expect(again).toMatchObject({ job: { id, attempt: 1, priorAttempts: 1 } });
      // A second reset adds the attempts of the second round.
      await ctx.store.cancelJob(id, { reason: 'again', now: at(11) });
      await ctx.store.completeCancel(again.lease, at(12));
      expect(await ctx.store.retryJob(id, at(20))).toEqual({ outcome: 'retried', status: 'queued' });
      expect(await mustGet(ctx.store, id)).toMatchObject({ attempt: 0, priorAttempts: 2 });
    });

    it('replays a dead job, leaves other statuses unchanged, null for an unknown id', async () => {
      const ids = await oneOfEach();
      expect(await ctx.store.retryJob(ids.dead, at(10))).toEqual({ outcome: 'retried', status: 'queued' });
      expect(await ctx.store.listDeadLetters({})).toEqual([]);
      for (const status of ['queued', 'running', 'waiting', 'completed'] as const) {
        expect(await ctx.store.retryJob(ids[status], at(10))).toEqual({ outcome: 'unchanged', status });
      }
      expect(await ctx.store.retryJob('no-such-job', at(10))).toBeNull();
    });
  });

  describe('removeJob', () => {
    it('deletes finished jobs (freeing their keys) and leaves active ones', async () => {
      const ids = await oneOfEach();
      for (const status of ['completed', 'dead', 'cancelled'] as const) {
        expect(await ctx.store.removeJob(ids[status], at(10))).toEqual({ outcome: 'removed', status });
        expect(await ctx.store.getJob(ids[status])).toBeNull();
      }
      for (const status of ['queued', 'running', 'waiting'] as const) {
        expect(await ctx.store.removeJob(ids[status], at(10))).toEqual({ outcome: 'unchanged', status });
      }
      expect(await ctx.store.removeJob('no-such-job', at(10))).toBeNull();
      const { lease } = await enqueueAndClaim(ctx.store, { name: 'k', idempotencyKey: 'receipt-1' }, { now: at(11) });
      await ctx.store.complete(lease, { now: at(12) });
      const [{ id: keyed }] = await ctx.store.listJobPage(page({ name: 'k' }));
      await ctx.store.removeJob(keyed, at(13));
      expect((await ctx.store.enqueue([newJob({ idempotencyKey: 'receipt-1' })], { now: at(14) }))[0].deduplicated).toBe(false);
    });
  });

  describe('runJobNow', () => {
    it('makes a delayed queued job due now, so a claim at now takes it', async () => {
      const id = await enqueueOne(ctx.store, { name: 'later', runAt: at(60_000) }, at(0));
      expect(await claimJobs(ctx.store, { names: ['later'], now: at(10) })).toEqual([]);
      expect(await ctx.store.runJobNow(id, at(10))).toEqual({ outcome: 'due', status: 'queued' });
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'queued', runAt: at(10), updatedAt: at(10), attempt: 0 });
      expect(idsOf(await claimJobs(ctx.store, { names: ['later'], now: at(10) }))).toEqual([id]);
    });

    it('leaves a due job, a job asleep in a workflow and every other status unchanged; null for an unknown id', async () => {
      const due = await enqueueOne(ctx.store, { name: 'due' }, at(0));
      expect(await ctx.store.runJobNow(due, at(10))).toEqual({ outcome: 'unchanged', status: 'queued' });
      expect((await mustGet(ctx.store, due)).runAt).toEqual(at(0));
      const { id: asleep, lease } = await enqueueAndClaim(ctx.store, { name: 'nap' }, { now: at(1) });
      await ctx.store.sleep(lease, { runAt: at(60_000), now: at(2) });
      expect(await ctx.store.runJobNow(asleep, at(10))).toEqual({ outcome: 'unchanged', status: 'queued' });
      expect((await mustGet(ctx.store, asleep)).runAt).toEqual(at(60_000));
      const ids = await oneOfEach();
      for (const status of ['running', 'waiting', 'completed', 'dead', 'cancelled'] as const) {
        expect(await ctx.store.runJobNow(ids[status], at(10))).toEqual({ outcome: 'unchanged', status });
      }
      expect(await ctx.store.runJobNow('no-such-job', at(10))).toBeNull();
    });
  });

  describe('replayDeadLetters', () => {
    it('replays every matching dead letter, reports those it cannot, and says how far it got', async () => {
      const die = async (overrides: Parameters<typeof enqueueAndClaim>[1], now: number) => {
        const { id, lease } = await enqueueAndClaim(ctx.store, overrides, { now: at(now) });
        await ctx.store.deadLetter(lease, { reason: 'x', now: at(now) });
        return id;
      };
      const a1 = await die({ name: 'a' }, 1);
      const a2 = await die({ name: 'a', idempotencyKey: 'taken' }, 2);
      const b = await die({ name: 'b' }, 3);
      await enqueueOne(ctx.store, { name: 'a', idempotencyKey: 'taken' }, at(4)); // now holds a2's key
      const progress: number[] = [];
      const report = await ctx.store.replayDeadLetters({ name: 'a' }, { now: at(10), onProgress: (n) => progress.push(n) });
      expect(report.replayed).toBe(1);
      expect(report.skipped).toEqual([{ id: a2, reason: expect.stringContaining('taken') as unknown }]);
      expect(progress.at(-1)).toBe(2);
      expect((await mustGet(ctx.store, a1)).status).toBe('queued');
      expect(idsOf(await ctx.store.listDeadLetters({}))).toEqual([b, a2]);
    });
  });

  describe('queues', () => {
    it('pauses and resumes queues, persisted; pausing changes no job', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store, {}, { now: at(0) });
      expect(await ctx.store.pausedQueues()).toEqual([]);
      await ctx.store.setQueuePaused('default', true, at(1));
      await ctx.store.setQueuePaused('default', true, at(2));
      await ctx.store.setQueuePaused('reports', true, at(3));
      expect(await ctx.store.pausedQueues()).toEqual(['default', 'reports']);
      // A running job of a paused queue carries on: its outcome is accepted.
      expect(await ctx.store.extendLease(lease, at(40_000), at(4))).toBe('extended');
      await ctx.store.complete(lease, { now: at(5) });
      expect((await mustGet(ctx.store, id)).status).toBe('completed');
      await ctx.store.setQueuePaused('default', false, at(6));
      expect(await ctx.store.pausedQueues()).toEqual(['reports']);
      await expectCode(ctx.store.setQueuePaused({ $ne: '' } as unknown as string, true, at(7)), 'INVALID_ARGUMENT');
    });

    it('lists queues with counts per status (dead letters included), paused flag and oldest queued job', async () => {
      await oneOfEach();
      await enqueueOne(ctx.store, { name: 'q2' }, at(7));
      await ctx.store.setQueuePaused('mail', true, at(8));
      await ctx.store.setQueuePaused('idle', true, at(8));
      expect(await ctx.store.listQueues()).toEqual([
        {
          name: 'default',
          paused: false,
          counts: { queued: 2, running: 0, waiting: 1, completed: 1, dead: 0, cancelled: 1 },
          oldestQueuedAt: at(1),
        },
        { name: 'idle', paused: true, counts: { queued: 0, running: 0, waiting: 0, completed: 0, dead: 0, cancelled: 0 } },
        { name: 'mail', paused: true, counts: { queued: 0, running: 1, waiting: 0, completed: 0, dead: 1, cancelled: 0 } },
      ]);
    });

    it('with now, counts the queued jobs asleep in a workflow (sleepUntil after now), per queue', async () => {
      const napping = await enqueueAndClaim(ctx.store, {}, { now: at(1) });
      await ctx.store.sleep(napping.lease, { runAt: at(100), now: at(2) });
      const short = await enqueueAndClaim(ctx.store, { queue: 'mail', name: 'm' }, { now: at(1) });
      await ctx.store.sleep(short.lease, { runAt: at(10), now: at(2) });
      await enqueueOne(ctx.store, { runAt: at(500) }, at(3)); // delayed, not asleep
      expect(await mustGet(ctx.store, napping.id)).toMatchObject({ status: 'queued', sleepUntil: at(100), runAt: at(100) });
      expect((await ctx.store.listJobPage(page({ statuses: ['queued'], name: 'send' })))[1]).toMatchObject({ id: napping.id, sleepUntil: at(100) });
      const sleeping = async (now?: Date) => (await ctx.store.listQueues(now)).map((q) => [q.name, q.counts.queued, q.sleeping]);
      expect(await sleeping(at(5))).toEqual([
        ['default', 2, 1],
        ['mail', 1, 1],
      ]);
      expect(await sleeping(at(50))).toEqual([
        ['default', 2, 1],
        ['mail', 1, 0],
      ]);
      expect(await sleeping()).toEqual([
        ['default', 2, undefined],
        ['mail', 1, undefined],
      ]);
      // Woken and running, it is no longer asleep.
      await claimJobs(ctx.store, { now: at(100), limit: 5, queues: ['default', 'mail'], names: ['send', 'm'] });
      expect((await ctx.store.listQueues(at(100))).map((q) => q.sleeping)).toEqual([0, 0]);
    });
  });

  describe('describeSchedule', () => {
    it('stores what a schedule enqueues, creating the schedule if needed, and keeps its state', async () => {
      const description = { cron: '0 3 * * *', timezone: 'Europe/Paris', job: { queue: 'reports', payload: { full: true }, priority: 2, maxAttempts: 4 } };
      await ctx.store.describeSchedule('nightly', description, at(10));
      expect(await ctx.store.listSchedules()).toEqual([
        { name: 'nightly', lastFireAt: null, firstSeenAt: at(10), firing: [], paused: false, updatedAt: at(10), description },
      ]);
      await ctx.store.advanceSchedule('nightly', null, at(20), at(21));
      await ctx.store.setSchedulePaused('nightly', true, at(22));
      const changed = { ...description, cron: '0 4 * * *' };
      await ctx.store.describeSchedule('nightly', changed, at(30));
      expect(await ctx.store.ensureSchedule('nightly', at(31))).toEqual({
        name: 'nightly',
        lastFireAt: at(20),
        firstSeenAt: at(10),
        firing: [],
        paused: true,
        updatedAt: at(30),
        description: changed,
      });
    });
  });
}
