/// <reference types="jest" />
import { LoomError } from '@loom/core';
import { at, enqueueAndClaim, enqueueOne, type ConformanceContext } from './harness.js';

export function describeFinishedCounts(ctx: ConformanceContext): void {
  describe('countFinished (optional)', () => {
    it('counts completed jobs by finish time and dead letters by death time, in [from, to)', async () => {
      const count = ctx.store.countFinished?.bind(ctx.store);
      if (count === undefined) return;
      for (const t of [10, 20, 30]) {
        const { lease } = await enqueueAndClaim(ctx.store, { name: 'ok' }, { now: at(t - 5) });
        await ctx.store.complete(lease, { now: at(t) });
      }
      const dead: string[] = [];
      for (const t of [20, 40]) {
        const { id, lease } = await enqueueAndClaim(ctx.store, { name: 'bad' }, { now: at(t - 5) });
        await ctx.store.deadLetter(lease, { reason: 'boom', now: at(t) });
        dead.push(id);
      }
      await enqueueOne(ctx.store, { name: 'waiting-in-line' }, at(25));
      const completed = (from: number, to: number) => count({ status: 'completed', from: at(from), to: at(to) });
      const died = (from: number, to: number) => count({ status: 'dead', from: at(from), to: at(to) });

      // A store may decline to count completions (null) when it has no index for it; dead letters it counts.
      const all = await completed(0, 100);
      if (all !== null) {
        expect(all).toBe(3);
        expect(await completed(10, 30)).toBe(2);
        expect(await completed(31, 100)).toBe(0);
      }
      expect(await died(0, 100)).toBe(2);
      expect(await died(20, 40)).toBe(1);
      expect(await died(21, 40)).toBe(0);

      // A dead letter put back in its queue is no longer dead.
      await ctx.store.retryJob(dead[0]!, at(50));
      expect(await died(0, 100)).toBe(1);
    });

    it('counts a completed child whose parent is still running (a store keeping it from retention for the parent)', async () => {
      const count = ctx.store.countFinished?.bind(ctx.store);
      if (count === undefined) return;
      const parent = await enqueueAndClaim(ctx.store, { name: 'parent' }, { now: at(1) });
      const child = await enqueueAndClaim(ctx.store, { name: 'child', parentId: parent.id }, { now: at(2) });
      await ctx.store.complete(child.lease, { now: at(10) });
      const inWindow = await count({ status: 'completed', from: at(10), to: at(11) });
      if (inWindow === null) return;
      expect(inWindow).toBe(1);
      expect(await count({ status: 'completed', from: at(0), to: at(10) })).toBe(0);
      await ctx.store.complete(parent.lease, { now: at(20) });
      expect(await count({ status: 'completed', from: at(10), to: at(11) })).toBe(1);
      expect(await count({ status: 'completed', from: at(0), to: at(100) })).toBe(2);
    });

    it('refuses a status other than completed or dead, counting nothing', async () => {
      const count = ctx.store.countFinished?.bind(ctx.store);
      if (count === undefined) return;
      const error = await count({ status: 'queued' as 'dead', from: at(0), to: at(10) }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(LoomError.is(error, 'INVALID_ARGUMENT')).toBe(true);
    });
  });
}
