/// <reference types="jest" />
import { waitTokenSignal, type JobStore, type LeaseRef, type WaitTokenRecord } from '@loom/core';
import { at, claimOne, enqueueAndClaim, expectLeaseLost, mustGet, type ConformanceContext } from './harness.js';

let serial = 0;
/** A fresh token id for `jobId` (ids only need to be unique; the engine makes them unguessable). */
function pendingToken(jobId: string, extra: Partial<WaitTokenRecord> = {}): WaitTokenRecord {
  serial += 1;
  return { id: `wt-conformance-${serial}-${Math.random().toString(36).slice(2)}`, jobId, status: 'pending', createdAt: at(1), ...extra };
}

async function waitingFor(store: JobStore, lease: LeaseRef, tokenId: string, now = at(5), timeoutAt?: Date): Promise<void> {
  expect(await store.wait(lease, { for: { signal: waitTokenSignal(tokenId) }, now, ...(timeoutAt ? { timeoutAt } : {}) })).toBe('waiting');
}

export function describeWaitTokens(ctx: ConformanceContext): void {
  describe('wait tokens: createWaitToken, getWaitToken, settleWaitToken', () => {
    it('stores a pending token under the lease and reads it back as given', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const token = pendingToken(id, { timeoutAt: at(60_000), schema: { type: 'object' }, timeoutDefault: { value: { approved: false } } });
      await ctx.store.createWaitToken(lease, token, at(1));
      expect(await ctx.store.getWaitToken(token.id)).toEqual(token);
      expect(await ctx.store.getWaitToken('no-such-token')).toBeNull();
    });

    it('is fenced: a stale lease stores nothing', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      await ctx.store.release(lease, at(1));
      const token = pendingToken(id);
      await expectLeaseLost(ctx.store.createWaitToken(lease, token, at(2)));
      expect(await ctx.store.getWaitToken(token.id)).toBeNull();
    });

    it('refuses a taken id', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const token = pendingToken(id);
      await ctx.store.createWaitToken(lease, token, at(1));
      await expect(ctx.store.createWaitToken(lease, { ...token, createdAt: at(2) }, at(2))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect(await ctx.store.getWaitToken(token.id)).toEqual(token);
    });

    it('completing wakes the job waiting for it with the output; a second settlement changes nothing and says so', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const token = pendingToken(id);
      await ctx.store.createWaitToken(lease, token, at(1));
      await waitingFor(ctx.store, lease, token.id);

      const first = await ctx.store.settleWaitToken(token.id, { settlement: { status: 'completed', output: { approved: true } }, now: at(100) });
      expect(first).toEqual({ settled: true, token: { ...token, status: 'completed', output: { approved: true }, settledAt: at(100) } });
      const job = await mustGet(ctx.store, id);
      expect(job).toMatchObject({ status: 'queued', runAt: at(100) });
      expect(job.signals).toEqual([
        { name: waitTokenSignal(token.id), id: waitTokenSignal(token.id), data: { status: 'completed', output: { approved: true } }, at: at(100) },
      ]);

      const again = await ctx.store.settleWaitToken(token.id, { settlement: { status: 'rejected', reason: 'late' }, now: at(200) });
      expect(again).toEqual({ settled: false, token: first!.token });
      expect(await ctx.store.getWaitToken(token.id)).toEqual(first!.token);
      expect((await mustGet(ctx.store, id)).signals).toHaveLength(1);
    });

    it('a rejection is delivered with its reason; the run takes it once', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const token = pendingToken(id);
      await ctx.store.createWaitToken(lease, token, at(1));
      expect((await ctx.store.settleWaitToken(token.id, { settlement: { status: 'rejected', reason: 'no budget' }, now: at(2) }))?.settled).toBe(true);
      // Settled before the run waited: the wait says so, the run consumes it.
      expect(await ctx.store.wait(lease, { for: { signal: waitTokenSignal(token.id) }, now: at(3) })).toBe('signal-pending');
      const step = await ctx.store.consumeSignal(lease, { signal: waitTokenSignal(token.id), stepName: 'waitForToken#1', now: at(4) });
      expect(step).toMatchObject({ name: 'waitForToken#1', status: 'completed', result: { status: 'rejected', reason: 'no budget' } });
      // A repeated settlement delivers nothing again: the run took it.
      await ctx.store.settleWaitToken(token.id, { settlement: { status: 'completed' }, now: at(5) });
      expect((await mustGet(ctx.store, id)).signals).toEqual([]);
    });

    it('concurrent settlements: exactly one wins, and the job gets exactly one signal', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const token = pendingToken(id);
      await ctx.store.createWaitToken(lease, token, at(1));
      await waitingFor(ctx.store, lease, token.id);
      const outcomes = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          ctx.store.settleWaitToken(token.id, {
            settlement: i % 2 === 0 ? { status: 'completed', output: i } : { status: 'rejected', reason: `r${i}` },
            now: at(10 + i),
          }),
        ),
      );
      const winners = outcomes.filter((o) => o?.settled);
      expect(winners).toHaveLength(1);
      const stored = await ctx.store.getWaitToken(token.id);
      expect(stored).toEqual(winners[0]!.token);
      const job = await mustGet(ctx.store, id);
      expect(job.status).toBe('queued');
      expect(job.signals).toHaveLength(1);
    });

    it('past its timeout only a time-out settles it, carrying the default; before it a time-out is refused', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const token = pendingToken(id, { timeoutAt: at(1_000), timeoutDefault: { value: 'fallback' } });
      await ctx.store.createWaitToken(lease, token, at(1));
      await waitingFor(ctx.store, lease, token.id, at(5), at(1_000));
      expect((await ctx.store.settleWaitToken(token.id, { settlement: { status: 'timed-out' }, now: at(999) }))?.settled).toBe(false);
      expect((await ctx.store.settleWaitToken(token.id, { settlement: { status: 'completed', output: 1 }, now: at(1_000) }))?.settled).toBe(false);
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'waiting', signals: [] });

      const claimed = await claimOne(ctx.store, { now: at(1_000) });
      const timedOut = await ctx.store.settleWaitToken(token.id, { settlement: { status: 'timed-out' }, now: at(1_001) });
      expect(timedOut).toMatchObject({ settled: true, token: { status: 'timed-out', settledAt: at(1_001) } });
      const step = await ctx.store.consumeSignal(claimed.lease, { signal: waitTokenSignal(token.id), stepName: 'w', now: at(1_002) });
      expect(step?.result).toEqual({ status: 'timed-out', hasDefault: true, output: 'fallback' });
    });

    it('an unknown token is null; a token of a finished job settles without touching the job', async () => {
      expect(await ctx.store.settleWaitToken('no-such-token', { settlement: { status: 'completed' }, now: at(1) })).toBeNull();
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const token = pendingToken(id);
      await ctx.store.createWaitToken(lease, token, at(1));
      await ctx.store.complete(lease, { result: 'done', now: at(2) });
      const before = await mustGet(ctx.store, id);
      expect((await ctx.store.settleWaitToken(token.id, { settlement: { status: 'completed', output: 1 }, now: at(3) }))?.settled).toBe(true);
      expect(await mustGet(ctx.store, id)).toEqual(before);
    });
  });
}
