/// <reference types="jest" />
import type { StoreStats } from '@loom/core';
import { at, claimOne, enqueueAndClaim, enqueueOne, idsOf, type ConformanceContext } from './harness.js';

/** Stats without zero counts or empty queues, so stores may report zeros or leave them out. */
function nonZero(stats: StoreStats): StoreStats {
  const queues: StoreStats['queues'] = {};
  for (const [queue, counts] of Object.entries(stats.queues)) {
    const kept = Object.fromEntries(Object.entries(counts).filter(([, n]) => n !== 0));
    if (Object.keys(kept).length > 0) queues[queue] = kept;
  }
  return { queues, deadLetters: stats.deadLetters };
}

export function describeQueries(ctx: ConformanceContext): void {
  describe('listJobs', () => {
    it('filters by name, queue, status, parentId and idempotencyKey; newest first; limit', async () => {
      // Due later: the claim below takes d (whatever partition each is in, on a partitioned store).
      const a = await enqueueOne(ctx.store, { name: 'a', parentId: 'p1', runAt: at(60_000) }, at(1));
      const b = await enqueueOne(ctx.store, { name: 'b', queue: 'mail', idempotencyKey: 'kb' }, at(2));
      const c = await enqueueOne(ctx.store, { name: 'a', queue: 'mail', parentId: 'p1' }, at(3));
      const { id: d, lease } = await enqueueAndClaim(ctx.store, { name: 'a', priority: 1 }, { now: at(4) });
      await ctx.store.complete(lease, { now: at(5) });

      expect(idsOf(await ctx.store.listJobs({}))).toEqual([d, c, b, a]);
      expect(idsOf(await ctx.store.listJobs({ name: 'a' }))).toEqual([d, c, a]);
      expect(idsOf(await ctx.store.listJobs({ queue: 'mail' }))).toEqual([c, b]);
      expect(idsOf(await ctx.store.listJobs({ status: ['completed'] }))).toEqual([d]);
      expect(idsOf(await ctx.store.listJobs({ status: ['queued', 'running', 'waiting'], name: 'a' }))).toEqual([c, a]);
      expect(idsOf(await ctx.store.listJobs({ parentId: 'p1' }))).toEqual([c, a]);
      expect(idsOf(await ctx.store.listJobs({ idempotencyKey: 'kb' }))).toEqual([b]);
      expect(idsOf(await ctx.store.listJobs({ name: 'a', queue: 'default' }))).toEqual([d, a]);
      expect(idsOf(await ctx.store.listJobs({ limit: 2 }))).toEqual([d, c]);
      expect(await ctx.store.listJobs({ name: 'nothing' })).toEqual([]);
    });

    it('filters cron runs by scheduledBefore: only jobs with a scheduledFor before that instant', async () => {
      await enqueueOne(ctx.store, { name: 'report' }, at(1)); // by hand: no scheduledFor
      const early = await enqueueOne(ctx.store, { name: 'report', scheduledFor: at(1_000), idempotencyKey: 'slot-1' }, at(2));
      const late = await enqueueOne(ctx.store, { name: 'report', scheduledFor: at(2_000), idempotencyKey: 'slot-2' }, at(3));
      await enqueueOne(ctx.store, { name: 'other', scheduledFor: at(1_000), idempotencyKey: 'other-1' }, at(4));
      const unfinished = ['queued', 'running', 'waiting'] as const;
      expect(idsOf(await ctx.store.listJobs({ name: 'report', scheduledBefore: at(2_001) }))).toEqual([late, early]);
      expect(idsOf(await ctx.store.listJobs({ name: 'report', status: [...unfinished], scheduledBefore: at(2_000) }))).toEqual([early]);
      expect(idsOf(await ctx.store.listJobs({ name: 'report', scheduledBefore: at(2_001), limit: 1 }))).toEqual([late]);
      expect(await ctx.store.listJobs({ name: 'report', scheduledBefore: at(1_000) })).toEqual([]);
    });
  });

  describe('stats', () => {
    it('counts jobs per queue and status, plus dead letters', async () => {
      expect(nonZero(await ctx.store.stats())).toEqual({ queues: {}, deadLetters: 0 });
      for (let i = 0; i < 4; i++) await enqueueOne(ctx.store, { payload: { i } }, at(i));
      await enqueueOne(ctx.store, { name: 'mail', queue: 'emails' });
      await enqueueOne(ctx.store, { name: 'mail', queue: 'emails', runAt: at(999_999) });

      const running = await claimOne(ctx.store, { now: at(10) });
      const done = await claimOne(ctx.store, { now: at(10) });
      await ctx.store.complete(done.lease, { now: at(11) });
      const doomed = await claimOne(ctx.store, { now: at(10) });
      await ctx.store.deadLetter(doomed.lease, { reason: 'gone', now: at(12) });
      const waiter = await claimOne(ctx.store, { names: ['mail'], queues: ['emails'], now: at(10) });
      await ctx.store.wait(waiter.lease, { for: { signal: 's' }, now: at(13) });
      expect(running.job.status).toBe('running');

      expect(nonZero(await ctx.store.stats())).toEqual({
        queues: {
          default: { queued: 1, running: 1, completed: 1 },
          emails: { queued: 1, waiting: 1 },
        },
        deadLetters: 1,
      });
    });

    it('counts every completion, one by one or in a batch, and takes off a completed job removed', async () => {
      for (let i = 0; i < 4; i++) await enqueueOne(ctx.store, { payload: { i } }, at(i));
      await enqueueOne(ctx.store, { queue: 'emails' }, at(5));
      const alone = await claimOne(ctx.store, { now: at(10) });
      await ctx.store.complete(alone.lease, { result: 'ok', now: at(11) });
      const batch = [await claimOne(ctx.store, { now: at(10) }), await claimOne(ctx.store, { now: at(10) })];
      const outcomes = await ctx.store.completeMany(
        batch.map(({ lease }) => ({ lease })),
        at(12),
      );
      expect(outcomes).toEqual(['completed', 'completed']);
      const retried = await claimOne(ctx.store, { now: at(10) });
      await ctx.store.retry(retried.lease, { runAt: at(20), error: { attempt: 1, at: at(13), name: 'Error', message: 'again' }, now: at(13) });
      const other = await claimOne(ctx.store, { queues: ['emails'], now: at(10) });
      await ctx.store.complete(other.lease, { now: at(14) });
      // A write whose lease is lost completes nothing and counts nothing.
      await expect(ctx.store.complete(alone.lease, { now: at(15) })).rejects.toThrow();

      expect(nonZero(await ctx.store.stats())).toEqual({ queues: { default: { queued: 1, completed: 3 }, emails: { completed: 1 } }, deadLetters: 0 });
      await ctx.store.removeJob(batch[0]!.job.id, at(16));
      await ctx.store.removeJob(other.job.id, at(16));
      expect(nonZero(await ctx.store.stats())).toEqual({ queues: { default: { queued: 1, completed: 2 } }, deadLetters: 0 });
      // The same counts through the queue listing.
      const listed = await ctx.store.listQueues();
      expect(listed.find((q) => q.name === 'default')?.counts).toMatchObject({ queued: 1, running: 0, completed: 2 });
    });

    it('counts a peer store’s completions too', async () => {
      const peer = await ctx.peer();
      for (let i = 0; i < 2; i++) await enqueueOne(ctx.store, { payload: { i } }, at(i));
      const mine = await claimOne(ctx.store, { now: at(10) });
      const theirs = await claimOne(peer, { now: at(10) });
      await ctx.store.complete(mine.lease, { now: at(11) });
      await peer.complete(theirs.lease, { now: at(11) });
      // What the peer completed is counted once it wrote its counts (at the latest when it closes).
      if (peer !== ctx.store) await peer.close();
      expect(nonZero(await ctx.store.stats())).toEqual({ queues: { default: { completed: 2 } }, deadLetters: 0 });
    });
  });
}
