/// <reference types="jest" />
import { LoomError, type JobRecord, type JobStore, type PayloadLimits } from '@loom/core';
import { at, claimOne, enqueueAndClaim, enqueueOne, leaseOf, mustGet, newJob, type ConformanceContext } from './harness.js';
import { sampleError } from './transitions.js';

/**
 * Large payloads and results (issue 33): a store states `payloadLimits`; values above
 * `offloadThreshold` may be kept outside the job's record, but every read of one job returns them
 * whole, and a value over `maxPayloadSize` is refused with `PAYLOAD_TOO_LARGE`, nothing stored.
 */
export function describePayloads(ctx: ConformanceContext, opts: { transactions: boolean }): void {
  const limitsOf = (store: JobStore): PayloadLimits => {
    if (!store.payloadLimits) throw new Error('This store states no payloadLimits (JobStore.payloadLimits)');
    return store.payloadLimits;
  };
  /** A payload of about `bytes` serialized, with a Date and nesting to check the round trip keeps types. */
  const large = (bytes: number, tag = 'p'): Record<string, unknown> => ({
    tag,
    at: at(123),
    nested: { list: [1, 'two', { three: true }], empty: {} },
    blob: tag.repeat(Math.ceil(bytes / tag.length)),
  });
  /** A string just over `maxPayloadSize` serialized. */
  const tooLarge = (store: JobStore): string => 'x'.repeat(limitsOf(store).maxPayloadSize + 1);
  /** The job as a list shows it: the payload itself, or (kept outside the record) no payload and its size. */
  const expectListed = (listed: JobRecord | undefined, payload: unknown): void => {
    expect(listed).toBeDefined();
    if (listed!.offloadedPayload === undefined) expect(listed!.payload).toEqual(payload);
    else {
      expect(listed!.payload).toBeUndefined();
      expect(listed!.offloadedPayload.size).toBeGreaterThan(limitsOf(ctx.store).offloadThreshold);
    }
  };
  const code = async (promise: Promise<unknown>): Promise<string | undefined> => {
    const err = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    return LoomError.is(err) ? err.code : `not a LoomError: ${String(err)}`;
  };

  describe('large payloads and results (payloadLimits)', () => {
    it('states limits: an offload threshold below the largest payload', () => {
      const limits = limitsOf(ctx.store);
      expect(limits.offloadThreshold).toBeGreaterThan(0);
      expect(limits.offloadThreshold).toBeLessThan(limits.maxPayloadSize);
    });

    it('refuses a payload over maxPayloadSize with PAYLOAD_TOO_LARGE, storing none of the call', async () => {
      const refused = ctx.store.enqueue([newJob({ payload: { n: 1 } }), newJob({ payload: { blob: tooLarge(ctx.store) } })], { now: at(0) });
      expect(await code(refused)).toBe('PAYLOAD_TOO_LARGE');
      expect(await ctx.store.listJobs({})).toEqual([]);
      expect(await ctx.store.listJobPage({ statuses: ['queued'], limit: 10 })).toEqual([]);
    });

    it('returns a payload over the offload threshold whole from claim and getJob; lists show it or its size', async () => {
      const payload = large(limitsOf(ctx.store).offloadThreshold + 10_000);
      const id = await enqueueOne(ctx.store, { payload });
      const { job } = await claimOne(ctx.store);
      expect(job.id).toBe(id);
      expect(job.payload).toEqual(payload);
      expect((await mustGet(ctx.store, id)).payload).toEqual(payload);
      const [listed] = await ctx.store.listJobs({});
      expectListed(listed, payload);
      const [summary] = await ctx.store.listJobPage({ statuses: ['running'], limit: 10 });
      expect(summary?.id).toBe(id);
      expect(summary).not.toHaveProperty('payload');
      if (listed?.offloadedPayload !== undefined) expect(summary?.payloadSize).toBe(listed.offloadedPayload.size);
    });

    it('keeps small payloads and large ones apart in one enqueue, each with its own job', async () => {
      const threshold = limitsOf(ctx.store).offloadThreshold;
      const payloads = [{ n: 1 }, large(threshold + 1_000, 'a'), { n: 3 }, large(threshold + 2_000, 'b')];
      const results = await ctx.store.enqueue(
        payloads.map((payload) => newJob({ payload })),
        { now: at(0) },
      );
      for (const [i, { id }] of results.entries()) expect((await mustGet(ctx.store, id)).payload).toEqual(payloads[i]);
      const claimed = await ctx.store.claim({
        owner: 'w',
        queues: ['default'],
        names: ['send'],
        limit: 4,
        leaseUntil: at(30_000),
        now: at(0),
      });
      expect(new Map(claimed.map((j) => [j.id, j.payload]))).toEqual(new Map(results.map((r, i) => [r.id, payloads[i]])));
    });

    it('stores a result over the offload threshold and getJob returns it whole; listJobPage gives no result', async () => {
      const result = large(limitsOf(ctx.store).offloadThreshold + 5_000, 'r');
      const { id, lease } = await enqueueAndClaim(ctx.store);
      await ctx.store.complete(lease, { result, now: at(10) });
      const job = await mustGet(ctx.store, id);
      expect(job).toMatchObject({ status: 'completed', result });
      const [listed] = await ctx.store.listJobs({ status: ['completed'] });
      if (listed?.offloadedResult === undefined) expect(listed?.result).toEqual(result);
      else expect(listed.result).toBeUndefined();
      const [summary] = await ctx.store.listJobPage({ statuses: ['completed'], limit: 10 });
      if (listed?.offloadedResult !== undefined) expect(summary?.resultSize).toBe(listed.offloadedResult.size);
    });

    it('completeMany stores large results, and refuses one over maxPayloadSize alone (the job stays running)', async () => {
      const result = large(limitsOf(ctx.store).offloadThreshold + 5_000, 'm');
      const a = await enqueueOne(ctx.store, { payload: { n: 'a' } });
      const b = await enqueueOne(ctx.store, { payload: { n: 'b' } });
      const c = await enqueueOne(ctx.store, { payload: { n: 'c' } });
      const jobs = await ctx.store.claim({ owner: 'w', queues: ['default'], names: ['send'], limit: 3, leaseUntil: at(30_000), now: at(0) });
      const byId = new Map(jobs.map((j) => [j.id, leaseOf(j)]));
      const outcomes = await ctx.store.completeMany(
        [
          { lease: byId.get(a)!, result },
          { lease: byId.get(b)!, result: tooLarge(ctx.store) },
          { lease: byId.get(c)!, result: 'small' },
        ],
        at(10),
      );
      expect(outcomes[0]).toBe('completed');
      expect(outcomes[2]).toBe('completed');
      const refused = outcomes[1] as { error: unknown };
      expect(LoomError.is(refused.error, 'PAYLOAD_TOO_LARGE')).toBe(true);
      // The refusal names the job whose result it was (built only for a refused item).
      expect((refused.error as Error).message).toMatch(new RegExp(`^The result of job ${b} is \\d+ bytes`));
      expect((await mustGet(ctx.store, a)).result).toEqual(result);
      expect(await mustGet(ctx.store, b)).toMatchObject({ status: 'running' });
      expect((await mustGet(ctx.store, b)).result).toBeUndefined();
      expect((await mustGet(ctx.store, c)).result).toBe('small');
    });

    it('refuses a result over maxPayloadSize from complete with PAYLOAD_TOO_LARGE; the job stays running', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      expect(await code(ctx.store.complete(lease, { result: tooLarge(ctx.store), now: at(10) }))).toBe('PAYLOAD_TOO_LARGE');
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'running' });
      await ctx.store.complete(lease, { result: 'fits', now: at(11) });
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'completed', result: 'fits' });
    });

    it('keeps a dead job’s large payload: getJob reads it, a replay runs with it', async () => {
      const payload = large(limitsOf(ctx.store).offloadThreshold + 1_000, 'd');
      const { id, lease } = await enqueueAndClaim(ctx.store, { payload });
      await ctx.store.deadLetter(lease, { reason: 'gave up', error: sampleError(1), now: at(10) });
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'dead', payload });
      expect(await ctx.store.replayDeadLetter(id, at(20))).toBe(id);
      const { job } = await claimOne(ctx.store, { now: at(20) });
      expect(job).toMatchObject({ id, payload });
    });

    it('a debounced enqueue replaces a large payload with the new one', async () => {
      const first = large(limitsOf(ctx.store).offloadThreshold + 1_000, 'f');
      const second = large(limitsOf(ctx.store).offloadThreshold + 2_000, 's');
      const id = await enqueueOne(ctx.store, { payload: first, debounceKey: 'k', runAt: at(100) });
      const [again] = await ctx.store.enqueue([newJob({ payload: second, debounceKey: 'k', runAt: at(200) })], { now: at(1) });
      expect(again).toMatchObject({ id, debounced: true });
      expect((await mustGet(ctx.store, id)).payload).toEqual(second);
      const { job } = await claimOne(ctx.store, { now: at(200) });
      expect(job.payload).toEqual(second);
    });

    it('removeJob deletes a finished job with a large payload and result', async () => {
      const threshold = limitsOf(ctx.store).offloadThreshold;
      const { id, lease } = await enqueueAndClaim(ctx.store, { payload: large(threshold + 1_000) });
      await ctx.store.complete(lease, { result: large(threshold + 1_000, 'r'), now: at(10) });
      expect(await ctx.store.removeJob(id, at(20))).toMatchObject({ outcome: 'removed' });
      expect(await ctx.store.getJob(id)).toBeNull();
    });

    if (opts.transactions) {
      it('createBatch refuses a member over maxPayloadSize, storing nothing; large members are stored', async () => {
        const refused = ctx.store.createBatch({ jobs: [newJob(), newJob({ payload: { blob: tooLarge(ctx.store) } })], callbacks: {} }, { now: at(0) });
        expect(await code(refused)).toBe('PAYLOAD_TOO_LARGE');
        expect(await ctx.store.listJobs({})).toEqual([]);
        const payload = large(limitsOf(ctx.store).offloadThreshold + 1_000, 'b');
        const batch = await ctx.store.createBatch({ jobs: [newJob({ payload })], callbacks: {} }, { now: at(0) });
        expect((await mustGet(ctx.store, batch.jobIds[0]!)).payload).toEqual(payload);
      });

      it('a large payload enqueued in a transaction that aborts leaves no job; one that commits is stored', async () => {
        const payload = large(limitsOf(ctx.store).offloadThreshold + 1_000, 't');
        let rolledBack = '';
        const failed = ctx.store.withTransaction!(async (session) => {
          [{ id: rolledBack }] = await ctx.store.enqueue([newJob({ payload })], { now: at(0), session });
          throw new Error('the caller’s own write failed');
        });
        await expect(failed).rejects.toThrow('own write failed');
        expect(await ctx.store.getJob(rolledBack)).toBeNull();
        expect(await ctx.store.listJobs({})).toEqual([]);
        const id = await ctx.store.withTransaction!(async (session) => (await ctx.store.enqueue([newJob({ payload })], { now: at(0), session }))[0]!.id);
        expect((await mustGet(ctx.store, id)).payload).toEqual(payload);
      });

      it('a large result completed in a transaction that aborts leaves the job running without it', async () => {
        const result = large(limitsOf(ctx.store).offloadThreshold + 1_000, 'x');
        const { id, lease } = await enqueueAndClaim(ctx.store);
        const failed = ctx.store.withTransaction!(async (session) => {
          await ctx.store.complete(lease, { result, now: at(10), session });
          throw new Error('rolled back');
        });
        await expect(failed).rejects.toThrow('rolled back');
        expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'running' });
        await ctx.store.withTransaction!(async (session) => ctx.store.complete(lease, { result, now: at(11), session }));
        expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'completed', result });
      });
    }
  });
}
