/// <reference types="jest" />
import { endedJobReason, waitTokenSignal, type JobStore, type LeaseRef, type WaitTokenRecord } from '@loom/core';
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

    it('an unknown token is null; completing a pending token of a finished job ends it cancelled, without touching the job', async () => {
      expect(await ctx.store.settleWaitToken('no-such-token', { settlement: { status: 'completed' }, now: at(1) })).toBeNull();
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const token = pendingToken(id);
      await ctx.store.createWaitToken(lease, token, at(1));
      await ctx.store.complete(lease, { result: 'done', now: at(2) });
      const before = await mustGet(ctx.store, id);
      const outcome = await ctx.store.settleWaitToken(token.id, { settlement: { status: 'completed', output: 1 }, now: at(3) });
      const ended = { ...token, status: 'cancelled', settledAt: at(3), reason: endedJobReason(id, 'completed') };
      expect(outcome).toEqual({ settled: false, token: ended });
      expect(await ctx.store.getWaitToken(token.id)).toEqual(ended);
      expect(await mustGet(ctx.store, id)).toEqual(before);
      // Cancelled for good: a rejection changes nothing either.
      expect(await ctx.store.settleWaitToken(token.id, { settlement: { status: 'rejected', reason: 'late' }, now: at(4) })).toEqual({
        settled: false,
        token: ended,
      });
    });
  });

  describe('wait tokens of ended jobs: endWaitTokens, listWaitTokens, removeJob', () => {
    it("lists a job's tokens oldest first, every status, and no other job's", async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const first = pendingToken(id, { createdAt: at(1) });
      const second = pendingToken(id, { createdAt: at(2), timeoutAt: at(9_000) });
      await ctx.store.createWaitToken(lease, second, at(2));
      await ctx.store.createWaitToken(lease, first, at(2));
      const other = await enqueueAndClaim(ctx.store, {}, { now: at(3) });
      await ctx.store.createWaitToken(other.lease, pendingToken(other.id), at(3));
      await ctx.store.settleWaitToken(second.id, { settlement: { status: 'completed', output: 'ok' }, now: at(4) });
      const listed = await ctx.store.listWaitTokens(id);
      expect(listed.map((t) => [t.id, t.status])).toEqual([
        [first.id, 'pending'],
        [second.id, 'completed'],
      ]);
      expect(await ctx.store.listWaitTokens(other.id)).toHaveLength(1);
      expect(await ctx.store.listWaitTokens('no-such-job')).toEqual([]);
    });

    it('leaves the tokens of a job that has not ended alone', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const token = pendingToken(id);
      await ctx.store.createWaitToken(lease, token, at(1));
      expect(await ctx.store.endWaitTokens(id, at(2))).toBe(0);
      await waitingFor(ctx.store, lease, token.id, at(3));
      expect(await ctx.store.endWaitTokens(id, at(4))).toBe(0);
      expect(await ctx.store.getWaitToken(token.id)).toEqual(token);
    });

    it("a cancelled job's pending tokens end cancelled, its settled ones stay; completing one then resumes nothing", async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const done = pendingToken(id);
      const open = pendingToken(id, { timeoutAt: at(60_000) });
      await ctx.store.createWaitToken(lease, done, at(1));
      await ctx.store.createWaitToken(lease, open, at(1));
      await ctx.store.settleWaitToken(done.id, { settlement: { status: 'rejected', reason: 'no' }, now: at(2) });
      await ctx.store.consumeSignal(lease, { signal: waitTokenSignal(done.id), stepName: 'w1', now: at(3) });
      await waitingFor(ctx.store, lease, open.id, at(4));
      expect((await ctx.store.cancelJob(id, { now: at(5) }))?.outcome).toBe('cancelled');

      expect(await ctx.store.endWaitTokens(id, at(6))).toBe(1);
      const ended = { ...open, status: 'cancelled', settledAt: at(6), reason: endedJobReason(id, 'cancelled') };
      expect(await ctx.store.getWaitToken(open.id)).toEqual(ended);
      expect(await ctx.store.getWaitToken(done.id)).toMatchObject({ status: 'rejected', reason: 'no', settledAt: at(2) });
      expect(await ctx.store.endWaitTokens(id, at(7))).toBe(0);

      const before = await mustGet(ctx.store, id);
      expect(await ctx.store.settleWaitToken(open.id, { settlement: { status: 'completed', output: 1 }, now: at(8) })).toEqual({
        settled: false,
        token: ended,
      });
      expect(await mustGet(ctx.store, id)).toEqual(before);
    });

    it("a dead job's pending tokens end too", async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const token = pendingToken(id);
      await ctx.store.createWaitToken(lease, token, at(1));
      await ctx.store.deadLetter(lease, { reason: 'gave up', now: at(2) });
      expect(await ctx.store.endWaitTokens(id, at(3))).toBe(1);
      expect(await ctx.store.getWaitToken(token.id)).toMatchObject({ status: 'cancelled', settledAt: at(3), reason: endedJobReason(id, 'dead') });
    });

    it('removing a job removes its tokens, pending or settled', async () => {
      for (const end of ['complete', 'deadLetter'] as const) {
        const { id, lease } = await enqueueAndClaim(ctx.store);
        const settled = pendingToken(id);
        const pending = pendingToken(id);
        await ctx.store.createWaitToken(lease, settled, at(1));
        await ctx.store.createWaitToken(lease, pending, at(1));
        await ctx.store.settleWaitToken(settled.id, { settlement: { status: 'completed' }, now: at(2) });
        if (end === 'complete') await ctx.store.complete(lease, { now: at(3) });
        else await ctx.store.deadLetter(lease, { reason: 'gave up', now: at(3) });
        expect((await ctx.store.removeJob(id, at(4)))?.outcome).toBe('removed');
        expect(await ctx.store.getWaitToken(settled.id)).toBeNull();
        expect(await ctx.store.getWaitToken(pending.id)).toBeNull();
        expect(await ctx.store.listWaitTokens(id)).toEqual([]);
        expect(await ctx.store.settleWaitToken(pending.id, { settlement: { status: 'completed' }, now: at(5) })).toBeNull();
      }
    });
  });
}
