/// <reference types="jest" />
import { at, claimJobs, enqueueOne, mustGet, newJob, type ConformanceContext } from './harness.js';

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

export function describeEnqueue(ctx: ConformanceContext): void {
  describe('enqueue', () => {
    it('stores a queued job that getJob returns with every field, Dates as Dates', async () => {
      const payload = { orderId: 'o-1', when: at(5), nested: { list: [1, 'two', null, true] } };
      const id = await enqueueOne(
        ctx.store,
        { payload, priority: 7, runAt: at(1_000), maxAttempts: 4, idempotencyKey: 'k-1', parentId: 'parent-1', scheduledFor: at(900) },
        at(10),
      );
      const job = await mustGet(ctx.store, id);
      expect(job).toMatchObject({
        id,
        name: 'send',
        queue: 'default',
        payload,
        status: 'queued',
        priority: 7,
        runAt: at(1_000),
        attempt: 0,
        maxAttempts: 4,
        idempotencyKey: 'k-1',
        parentId: 'parent-1',
        scheduledFor: at(900),
        errors: [],
        steps: [],
        signals: [],
        createdAt: at(10),
        updatedAt: at(10),
      });
      expect((job.payload as { when: unknown }).when).toBeInstanceOf(Date);
      for (const date of [job.runAt, job.createdAt, job.updatedAt, job.scheduledFor]) expect(date).toBeInstanceOf(Date);
      expect(job.lease).toBeUndefined();
    });

    it("keeps a job's trace context as given: getJob, claim, retry and the dead letter return it", async () => {
      const trace = { traceparent: TRACEPARENT, tracestate: 'vendor=abc', link: true };
      const id = await enqueueOne(ctx.store, { trace });
      const plain = await enqueueOne(ctx.store, { trace: { traceparent: TRACEPARENT } });
      const none = await enqueueOne(ctx.store);
      expect((await mustGet(ctx.store, id)).trace).toEqual(trace);
      expect((await mustGet(ctx.store, plain)).trace).toEqual({ traceparent: TRACEPARENT });
      expect((await mustGet(ctx.store, none)).trace).toBeUndefined();
      const claimed = await claimJobs(ctx.store, { limit: 3, now: at(1) });
      expect(Object.fromEntries(claimed.map((j) => [j.id, j.trace]))).toEqual({ [id]: trace, [plain]: { traceparent: TRACEPARENT }, [none]: undefined });
      const lease = { jobId: id, token: claimed.find((j) => j.id === id)!.lease!.token };
      await ctx.store.retry(lease, { runAt: at(2), error: { attempt: 1, at: at(1), name: 'Error', message: 'boom' }, now: at(1) });
      const [again] = await claimJobs(ctx.store, { now: at(2) });
      expect(again).toMatchObject({ id, attempt: 2, trace });
      await ctx.store.deadLetter({ jobId: id, token: again.lease!.token }, { reason: 'gave up', now: at(3) });
      expect((await ctx.store.listDeadLetters({}))[0]?.job.trace).toEqual(trace);
    });

    it('refuses a malformed trace context with INVALID_ARGUMENT and stores nothing', async () => {
      const bad: unknown[] = [
        'not-an-object',
        { traceparent: { $ne: null } },
        { traceparent: TRACEPARENT, tracestate: 7 },
        { traceparent: TRACEPARENT, link: 'yes' },
        { traceparent: TRACEPARENT, $where: 'sleep(1000)' },
      ];
      for (const trace of bad) {
        await expect(ctx.store.enqueue([newJob({ trace: trace as never })], { now: at(0) })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      }
      expect(await ctx.store.listJobs({})).toEqual([]);
    });

    it('stores the steps and forkedFrom a job is enqueued with (jobs.fork); a run claims it with them', async () => {
      const steps = [
        { name: 'charge', kind: 'step' as const, status: 'completed' as const, result: { chargeId: 'ch-1' }, at: at(1), seq: 0 },
        { name: 'patched:v2', kind: 'step' as const, status: 'completed' as const, result: true, at: at(2) },
        { name: 'pickup', kind: 'sleep' as const, status: 'completed' as const, wakeAt: at(3), at: at(3), seq: 1 },
      ];
      const id = await enqueueOne(ctx.store, { steps, forkedFrom: 'original-job-id' });
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'queued', attempt: 0, steps, forkedFrom: 'original-job-id' });
      const [claimed] = await claimJobs(ctx.store);
      expect(claimed).toMatchObject({ id, steps, forkedFrom: 'original-job-id' });
      await expect(ctx.store.enqueue([newJob({ steps: 'no' as never })], { now: at(0) })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    });

    it('survives init being called again (it is idempotent)', async () => {
      const id = await enqueueOne(ctx.store);
      await ctx.store.init();
      expect((await mustGet(ctx.store, id)).status).toBe('queued');
      await enqueueOne(ctx.store, { idempotencyKey: 'after-init' });
      expect(await ctx.store.listJobs({})).toHaveLength(2);
    });

    it('gives every job its own string id and returns results in input order', async () => {
      const results = await ctx.store.enqueue([newJob({ payload: { n: 1 } }), newJob({ payload: { n: 2 } }), newJob({ payload: { n: 3 } })], { now: at(0) });
      expect(results.map((r) => r.deduplicated)).toEqual([false, false, false]);
      expect(new Set(results.map((r) => r.id)).size).toBe(3);
      for (const [i, r] of results.entries()) {
        expect(typeof r.id).toBe('string');
        expect((await mustGet(ctx.store, r.id)).payload).toEqual({ n: i + 1 });
      }
    });

    it('returns null for an unknown id (of any shape)', async () => {
      for (const id of ['does-not-exist', '000000000000000000000000', '']) expect(await ctx.store.getJob(id)).toBeNull();
    });

    it('never lets a caller change stored data through objects it passed in or got back', async () => {
      const payload = { items: [1, 2] };
      const id = await enqueueOne(ctx.store, { payload });
      payload.items.push(3);
      const copy = await mustGet(ctx.store, id);
      (copy.payload as { items: number[] }).items.push(4);
      copy.status = 'completed';
      expect(await mustGet(ctx.store, id)).toMatchObject({ payload: { items: [1, 2] }, status: 'queued' });
    });

    it('deduplicates a taken idempotency key: same id, deduplicated, nothing stored', async () => {
      const first = await enqueueOne(ctx.store, { idempotencyKey: 'receipt:o1', payload: { v: 1 } });
      const [again] = await ctx.store.enqueue([newJob({ idempotencyKey: 'receipt:o1', payload: { v: 2 } })], { now: at(5) });
      expect(again).toEqual({ id: first, deduplicated: true });
      expect(await ctx.store.listJobs({ idempotencyKey: 'receipt:o1' })).toHaveLength(1);
      expect(await mustGet(ctx.store, first)).toMatchObject({ payload: { v: 1 }, updatedAt: at(0) });
      expect((await ctx.store.stats()).queues.default?.queued).toBe(1);
    });

    it('deduplicates within one batch and keeps input order', async () => {
      const taken = await enqueueOne(ctx.store, { idempotencyKey: 'taken' });
      const results = await ctx.store.enqueue(
        [newJob({ idempotencyKey: 'fresh' }), newJob({ idempotencyKey: 'taken' }), newJob({ idempotencyKey: 'fresh' }), newJob()],
        { now: at(1) },
      );
      expect(results[0].deduplicated).toBe(false);
      expect(results[1]).toEqual({ id: taken, deduplicated: true });
      expect(results[2]).toEqual({ id: results[0].id, deduplicated: true });
      expect(results[3].deduplicated).toBe(false);
      expect(await ctx.store.listJobs({})).toHaveLength(3);
    });

    it('stores one job per key when many enqueues race on few keys', async () => {
      const keys = ['k-a', 'k-b', 'k-c'];
      const calls = Array.from({ length: 30 }, (_, i) =>
        ctx.store.enqueue([newJob({ idempotencyKey: keys[i % keys.length], payload: { i } })], { now: at(i) }),
      );
      const results = (await Promise.all(calls)).map(([r]) => r);
      for (const key of keys) {
        const mine = results.filter((_, i) => keys[i % keys.length] === key);
        expect(new Set(mine.map((r) => r.id)).size).toBe(1);
        expect(mine.filter((r) => !r.deduplicated)).toHaveLength(1);
        expect(await ctx.store.listJobs({ idempotencyKey: key })).toHaveLength(1);
      }
      expect(await ctx.store.listJobs({})).toHaveLength(3);
    });

    it("keeps a completed job's key taken", async () => {
      const id = await enqueueOne(ctx.store, { idempotencyKey: 'once' });
      const [job] = await ctx.store.claim({ owner: 'w', queues: ['default'], names: ['send'], limit: 1, leaseUntil: at(30_000), now: at(0) });
      await ctx.store.complete({ jobId: job.id, token: job.lease!.token }, { now: at(1) });
      const [again] = await ctx.store.enqueue([newJob({ idempotencyKey: 'once' })], { now: at(2) });
      expect(again).toEqual({ id, deduplicated: true });
    });
  });
}
