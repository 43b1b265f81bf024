/// <reference types="jest" />
import { DEFAULT_JOB_LOG_LINES, MAX_JOB_LOG_FIELDS_BYTES, MAX_JOB_LOG_LINE_CHARS, MAX_JOB_LOG_LINES, type ErrorRecord } from '@loom/core';
import { at, claimJobs, enqueueAndClaim, expectLeaseLost, idsOf, mustGet, type ConformanceContext } from './harness.js';

export const sampleError = (attempt: number, message = `attempt ${attempt} failed`): ErrorRecord => ({
  attempt,
  at: at(attempt * 1_000),
  name: 'TypeError',
  message,
  stack: `TypeError: ${message}\n    at handler (job.ts:1:1)`,
  code: 'JOB_FAILED',
});

export function describeTransitions(ctx: ConformanceContext): void {
  describe('complete', () => {
    it('moves the job to completed with its result and finishedAt', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      await ctx.store.complete(lease, { result: { sent: true, at: at(7) }, now: at(20) });
      const job = await mustGet(ctx.store, id);
      expect(job).toMatchObject({ status: 'completed', result: { sent: true, at: at(7) }, finishedAt: at(20), updatedAt: at(20), attempt: 1 });
      expect(job.lease).toBeUndefined();
    });

    it('lets exactly one of two concurrent completions with one lease succeed', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const outcomes = await Promise.allSettled([
        ctx.store.complete(lease, { result: 'first', now: at(10) }),
        ctx.store.complete(lease, { result: 'second', now: at(11) }),
      ]);
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      const [rejected] = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
      expect(rejected.reason).toMatchObject({ code: 'LEASE_LOST' });
      const winner = outcomes[0].status === 'fulfilled' ? 'first' : 'second';
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'completed', result: winner });
    });

    it('completes without a result', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      await ctx.store.complete(lease, { now: at(20) });
      const job = await mustGet(ctx.store, id);
      expect(job.status).toBe('completed');
      expect(job.result).toBeUndefined();
    });
  });

  describe('retry', () => {
    it('requeues at runAt, appends the error, keeps the attempt', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      await ctx.store.retry(lease, { runAt: at(5_000), error: sampleError(1), now: at(1_000) });
      const job = await mustGet(ctx.store, id);
      expect(job).toMatchObject({ status: 'queued', runAt: at(5_000), attempt: 1, errors: [sampleError(1)], updatedAt: at(1_000) });
      expect(job.errors[0].at).toBeInstanceOf(Date);
      expect(job.lease).toBeUndefined();
      expect(await claimJobs(ctx.store, { now: at(4_999) })).toEqual([]);
      const [again] = await claimJobs(ctx.store, { now: at(5_000) });
      expect(again).toMatchObject({ id, attempt: 2 });
      await ctx.store.retry({ jobId: id, token: again.lease!.token }, { runAt: at(9_000), error: sampleError(2), now: at(6_000) });
      expect((await mustGet(ctx.store, id)).errors).toEqual([sampleError(1), sampleError(2)]);
    });
  });

  describe('release', () => {
    it('requeues at now and gives the attempt back', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store, { runAt: at(-10_000) });
      await ctx.store.release(lease, at(3_000));
      const job = await mustGet(ctx.store, id);
      expect(job).toMatchObject({ status: 'queued', attempt: 0, runAt: at(3_000) });
      expect(job.lease).toBeUndefined();
      expect(job.errors).toEqual([]);
      const [again] = await claimJobs(ctx.store, { now: at(3_000), owner: 'other-instance' });
      expect(again).toMatchObject({ id, attempt: 1 });
    });
  });

  describe('sleep', () => {
    it('requeues at the wake time, gives the attempt back and records the step', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const nap = { name: 'nap', kind: 'sleep' as const, status: 'pending' as const, wakeAt: at(60_000), at: at(10) };
      await ctx.store.sleep(lease, { runAt: at(60_000), step: nap, now: at(10) });
      const job = await mustGet(ctx.store, id);
      expect(job).toMatchObject({ status: 'queued', attempt: 0, runAt: at(60_000), steps: [nap] });
      expect(job.lease).toBeUndefined();
      expect(await claimJobs(ctx.store, { now: at(59_999) })).toEqual([]);
      expect(idsOf(await claimJobs(ctx.store, { now: at(60_000) }))).toEqual([id]);
    });

    it('sleeps without a step', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      await ctx.store.sleep(lease, { runAt: at(100), now: at(10) });
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'queued', runAt: at(100), steps: [] });
    });
  });

  describe('recordStep', () => {
    it('stores a step; the first completed write wins', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const first = { name: 'charge', kind: 'step' as const, status: 'completed' as const, result: { chargeId: 'c1' }, at: at(1) };
      expect(await ctx.store.recordStep(lease, first, at(1))).toEqual(first);
      const second = { ...first, result: { chargeId: 'c2' }, at: at(2) };
      expect(await ctx.store.recordStep(lease, second, at(2))).toEqual(first);
      expect((await mustGet(ctx.store, id)).steps).toEqual([first]);
    });

    it('keeps steps in the order they were recorded, across attempts', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store, {}, { leaseMs: 1_000 });
      const a = { name: 'a', kind: 'step' as const, status: 'completed' as const, result: 1, at: at(1) };
      await ctx.store.recordStep(lease, a, at(1));
      const [again] = await claimJobs(ctx.store, { now: at(2_000) });
      expect(again.steps).toEqual([a]);
      const b = { name: 'b', kind: 'step' as const, status: 'completed' as const, result: null, at: at(2_001) };
      await ctx.store.recordStep({ jobId: id, token: again.lease!.token }, b, at(2_001));
      expect((await mustGet(ctx.store, id)).steps).toEqual([a, b]);
    });

    it('replaces a pending step (a sleep in progress) with the next write of that name', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const pending = { name: 'nap', kind: 'sleep' as const, status: 'pending' as const, wakeAt: at(100), at: at(1) };
      await ctx.store.recordStep(lease, pending, at(1));
      const done = { ...pending, status: 'completed' as const, at: at(100) };
      expect(await ctx.store.recordStep(lease, done, at(100))).toEqual(done);
      expect((await mustGet(ctx.store, id)).steps).toEqual([done]);
    });
  });

  describe('appendLogs', () => {
    it('keeps the last DEFAULT_JOB_LOG_LINES lines, oldest first, across writes; refuses malformed lines', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const line = (i: number) => ({ at: at(i), level: 'info' as const, msg: `line ${i}`, attempt: 1 });
      const withFields = { ...line(2), level: 'error' as const, fields: { orderId: 'o1', err: { name: 'Error', message: 'boom' }, n: [1, 2] } };
      await ctx.store.appendLogs(lease, [line(1), withFields], at(2));
      expect((await mustGet(ctx.store, id)).logs).toEqual([line(1), withFields]);
      await ctx.store.appendLogs(
        lease,
        Array.from({ length: DEFAULT_JOB_LOG_LINES }, (_, i) => line(i + 3)),
        at(3),
      );
      const logs = (await mustGet(ctx.store, id)).logs!;
      expect(logs).toHaveLength(DEFAULT_JOB_LOG_LINES);
      expect(logs[0]).toEqual(line(3));
      expect(logs.at(-1)).toEqual(line(DEFAULT_JOB_LOG_LINES + 2));
      for (const bad of [
        { $push: 1 },
        [{ ...line(1), level: 'trace' }],
        [{ ...line(1), msg: 'x'.repeat(MAX_JOB_LOG_LINE_CHARS + 1) }],
        [{ ...line(1), at: 'now' }],
        [{ ...line(1), fields: ['a'] }],
        [{ ...line(1), fields: { big: 'x'.repeat(MAX_JOB_LOG_FIELDS_BYTES) } }],
      ]) {
        await expect(ctx.store.appendLogs(lease, bad as never, at(4))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      }
      for (const keep of [0, 1.5, MAX_JOB_LOG_LINES + 1]) {
        await expect(ctx.store.appendLogs(lease, [line(9)], at(4), keep)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      }
      expect((await mustGet(ctx.store, id)).logs).toHaveLength(DEFAULT_JOB_LOG_LINES);
    });

    it('keeps the last `keep` lines of the tail and the new lines together', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const line = (i: number) => ({ at: at(i), level: 'warn' as const, msg: `line ${i}`, attempt: 2 });
      await ctx.store.appendLogs(lease, [line(1), line(2), line(3)], at(3), 5);
      await ctx.store.appendLogs(lease, [line(4), line(5)], at(5), 3);
      expect((await mustGet(ctx.store, id)).logs).toEqual([line(3), line(4), line(5)]);
      await ctx.store.appendLogs(lease, [line(6), line(7)], at(7), 1);
      expect((await mustGet(ctx.store, id)).logs).toEqual([line(7)]);
      const many = Array.from({ length: MAX_JOB_LOG_LINES + 5 }, (_, i) => line(i + 10));
      await ctx.store.appendLogs(lease, many, at(9), MAX_JOB_LOG_LINES);
      const logs = (await mustGet(ctx.store, id)).logs!;
      expect(logs).toHaveLength(MAX_JOB_LOG_LINES);
      expect(logs[0]).toEqual(line(15));
    });

    it('comes with the job when it is claimed again (the engine counts it against the caps)', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const kept = [{ at: at(1), level: 'info' as const, msg: 'first run', attempt: 1 }];
      await ctx.store.appendLogs(lease, kept, at(1));
      await ctx.store.retry(lease, { runAt: at(5_000), error: sampleError(1), now: at(2) });
      // A claim of many and a claim of one (stores may read them differently).
      const [many] = await claimJobs(ctx.store, { now: at(5_000), limit: 5 });
      expect(many).toMatchObject({ id, logs: kept });
      await ctx.store.retry({ jobId: id, token: many.lease!.token }, { runAt: at(6_000), error: sampleError(2), now: at(5_001) });
      const [one] = await claimJobs(ctx.store, { now: at(6_000), limit: 1 });
      expect(one).toMatchObject({ id, logs: kept });
    });

    it('stays with the job when it dies, and with the dead job retried', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const kept = [{ at: at(1), level: 'error' as const, msg: 'last words', attempt: 1, fields: { code: 'E1' } }];
      await ctx.store.appendLogs(lease, kept, at(1));
      await ctx.store.deadLetter(lease, { reason: 'boom', now: at(2) });
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'dead', logs: kept });
      expect(await ctx.store.replayDeadLetter(id, at(3))).toBe(id);
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'queued', logs: kept });
    });

    it('is not part of a job list', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      await ctx.store.appendLogs(lease, [{ at: at(1), level: 'info', msg: 'hi', attempt: 1 }], at(1));
      const page = await ctx.store.listJobPage({ statuses: ['running'], limit: 10 });
      const listed = page.find((j) => j.id === id);
      expect(listed).toBeDefined();
      expect(listed).not.toHaveProperty('logs');
    });
  });

  describe('progress', () => {
    it('stores the latest progress value', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      await ctx.store.progress(lease, 0.25, at(1));
      await ctx.store.progress(lease, { done: 3, of: 4 }, at(2));
      expect(await mustGet(ctx.store, id)).toMatchObject({ progress: { done: 3, of: 4 }, status: 'running' });
    });
  });

  describe('extendLease', () => {
    it('moves lease.until and keeps the token', async () => {
      const { id, lease, job } = await enqueueAndClaim(ctx.store);
      await ctx.store.extendLease(lease, at(90_000), at(20_000));
      const after = await mustGet(ctx.store, id);
      expect(after.lease).toEqual({ ...job.lease, until: at(90_000) });
      expect(after.attempt).toBe(1);
    });

    it('refuses (LEASE_LOST) a heartbeat arriving after the lease ran out, even when nobody took the job over; nothing changes', async () => {
      // A worker stopped (SIGSTOP) past its lease: resumed, its heartbeat must not revive the lease.
      const { id, lease } = await enqueueAndClaim(ctx.store, {}, { now: at(0), leaseMs: 1_000 });
      expect(await ctx.store.extendLease(lease, at(2_000), at(1_000))).toBe('extended'); // at the lease's last instant: still held
      const before = await mustGet(ctx.store, id);
      await expectLeaseLost(ctx.store.extendLease(lease, at(40_000), at(2_001)));
      expect(await mustGet(ctx.store, id)).toEqual(before);
      // The job is still there for a reclaim, with a new lease.
      expect(idsOf(await claimJobs(ctx.store, { now: at(2_002), owner: 'worker-b' }))).toEqual([id]);
    });
  });
}
