/// <reference types="jest" />
import type { JobStore } from '@loom/core';
import { at, enqueueAndClaim, expectLeaseLost, mustGet, newJob, type ConformanceContext } from './harness.js';

function transactional(store: JobStore): NonNullable<JobStore['withTransaction']> {
  if (!store.withTransaction) {
    throw new Error('This store has no withTransaction: pass { transactions: false } to describeStoreConformance');
  }
  return store.withTransaction.bind(store);
}

class HandlerFailed extends Error {}

export function describeTransactions(ctx: ConformanceContext): void {
  describe('withTransaction', () => {
    it('commits a completion when the block succeeds and returns its value', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const value = await transactional(ctx.store)(async (session) => {
        await ctx.store.complete(lease, { result: 'paid', now: at(10), session });
        return 'block value';
      });
      expect(value).toBe('block value');
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'completed', result: 'paid' });
    });

    it('leaves the job running when the block throws after completing it', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const before = await mustGet(ctx.store, id);
      const outcome = transactional(ctx.store)(async (session) => {
        await ctx.store.complete(lease, { result: 'paid', now: at(10), session });
        throw new HandlerFailed("the handler's own write failed");
      });
      await expect(outcome).rejects.toBeInstanceOf(HandlerFailed);
      expect(await mustGet(ctx.store, id)).toEqual(before);
      await ctx.store.complete(lease, { now: at(20) });
      expect((await mustGet(ctx.store, id)).status).toBe('completed');
    });

    it('stores an enqueue only when its transaction commits', async () => {
      let rolledBack = '';
      await expect(
        transactional(ctx.store)(async (session) => {
          [{ id: rolledBack }] = await ctx.store.enqueue([newJob({ idempotencyKey: 'tx-1' })], { now: at(1), session });
          throw new HandlerFailed('order insert failed');
        }),
      ).rejects.toBeInstanceOf(HandlerFailed);
      expect(await ctx.store.getJob(rolledBack)).toBeNull();
      expect(await ctx.store.listJobs({ idempotencyKey: 'tx-1' })).toEqual([]);

      const id = await transactional(ctx.store)(async (session) => {
        const [result] = await ctx.store.enqueue([newJob({ idempotencyKey: 'tx-1' })], { now: at(2), session });
        expect(result.deduplicated).toBe(false);
        return result.id;
      });
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'queued', idempotencyKey: 'tx-1' });
    });

    it('refuses a completion with a lost lease inside a transaction and changes nothing', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store, {}, { leaseMs: 1_000 });
      await ctx.store.release(lease, at(5));
      const before = await mustGet(ctx.store, id);
      await expectLeaseLost(
        transactional(ctx.store)(async (session) => {
          await ctx.store.complete(lease, { now: at(10), session });
        }),
      );
      expect(await mustGet(ctx.store, id)).toEqual(before);
    });
  });
}
