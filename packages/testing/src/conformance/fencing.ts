/// <reference types="jest" />
import type { ErrorRecord, JobStore, LeaseRef, StepRecord } from '@loom/core';
import { at, claimJobs, enqueueAndClaim, expectLeaseLost, leaseOf, mustGet, type ConformanceContext } from './harness.js';

const failure = (attempt: number): ErrorRecord => ({ attempt, at: at(1_500), name: 'Error', message: 'stale worker failed' });
const step = (name: string): StepRecord => ({ name, kind: 'step', status: 'completed', result: 'stale', at: at(1_500) });

/** Every operation that takes a lease, each trying to change the job in its own way. */
export const FENCED_OPERATIONS: [string, (store: JobStore, lease: LeaseRef, now: Date) => Promise<unknown>][] = [
  ['extendLease', (s, l, now) => s.extendLease(l, at(999_000), now)],
  ['complete', (s, l, now) => s.complete(l, { result: 'stale', now })],
  ['retry', (s, l, now) => s.retry(l, { runAt: at(50_000), error: failure(1), now })],
  ['deadLetter', (s, l, now) => s.deadLetter(l, { reason: 'stale', error: failure(1), now })],
  ['release', (s, l, now) => s.release(l, now)],
  ['sleep', (s, l, now) => s.sleep(l, { runAt: at(60_000), step: { ...step('nap'), kind: 'sleep', status: 'pending' }, now })],
  ['wait (for a new signal)', (s, l, now) => s.wait(l, { for: { signal: 'never' }, timeoutAt: at(60_000), now })],
  ['wait (for a stored signal)', (s, l, now) => s.wait(l, { for: { signal: 'go' }, now })],
  ['recordStep', (s, l, now) => s.recordStep(l, step('stale-step'), now)],
  ['consumeSignal', (s, l, now) => s.consumeSignal(l, { signal: 'go', stepName: 'go', now })],
  ['progress', (s, l, now) => s.progress(l, { pct: 99 }, now)],
  ['appendLogs', (s, l, now) => s.appendLogs(l, [{ at: now, level: 'info', msg: 'late', attempt: 1 }], now)],
];

export function describeFencing(ctx: ConformanceContext): void {
  describe('fencing: every post-claim operation with a lost lease throws LEASE_LOST and changes nothing', () => {
    /** A job whose first lease (returned) expired and was taken over by another worker (`current`). */
    async function takenOver(): Promise<{ id: string; stale: LeaseRef; current: LeaseRef }> {
      const { id, lease: stale } = await enqueueAndClaim(ctx.store, {}, { now: at(0), leaseMs: 1_000, owner: 'paused-worker' });
      expect(await ctx.store.signal(id, { name: 'go', data: { ok: 1 }, now: at(500) })).toBe(true);
      const [again] = await claimJobs(ctx.store, { now: at(1_001), owner: 'new-worker' });
      expect(again.id).toBe(id);
      return { id, stale, current: leaseOf(again) };
    }

    for (const [name, operation] of FENCED_OPERATIONS) {
      it(`${name}: refused for a worker whose lease was taken over`, async () => {
        const { id, stale, current } = await takenOver();
        const before = await mustGet(ctx.store, id);
        await expectLeaseLost(operation(ctx.store, stale, at(1_500)));
        expect(await mustGet(ctx.store, id)).toEqual(before);
        await ctx.store.complete(current, { result: 'fresh', now: at(1_600) });
        expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'completed', result: 'fresh' });
      });

      it(`${name}: refused once the job has completed`, async () => {
        const { id, lease } = await enqueueAndClaim(ctx.store);
        await ctx.store.complete(lease, { result: 'done', now: at(10) });
        const before = await mustGet(ctx.store, id);
        await expectLeaseLost(operation(ctx.store, lease, at(1_500)));
        expect(await mustGet(ctx.store, id)).toEqual(before);
      });

      it(`${name}: refused with a token the job was never claimed with, and for an unknown job`, async () => {
        const { id, lease } = await enqueueAndClaim(ctx.store);
        await ctx.store.signal(id, { name: 'go', data: 1, now: at(1) });
        const before = await mustGet(ctx.store, id);
        await expectLeaseLost(operation(ctx.store, { jobId: id, token: `${lease.token}-forged` }, at(1_500)));
        await expectLeaseLost(operation(ctx.store, { jobId: 'no-such-job', token: lease.token }, at(1_500)));
        expect(await mustGet(ctx.store, id)).toEqual(before);
      });
    }

    it('a released job refuses its old lease', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      await ctx.store.release(lease, at(5));
      const before = await mustGet(ctx.store, id);
      await expectLeaseLost(ctx.store.complete(lease, { now: at(6) }));
      expect(await mustGet(ctx.store, id)).toEqual(before);
    });
  });
}
