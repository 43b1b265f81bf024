import { describe, expect, it } from '@jest/globals';
import { LoomError, MemoryStore, MEMORY_STORE_ERROR_HISTORY, type JobRecord, type NewJob } from '@loom/core';

// MemoryStore specifics; the JobStore contract itself is tested by describeStoreConformance in
// packages/testing/test/memory-store.conformance.test.ts.

const REFERENCE = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number): Date => new Date(REFERENCE + ms);
const HOUR = 3_600_000;

function newJob(overrides: Partial<NewJob> = {}): NewJob {
  return { name: 'send', queue: 'default', payload: { n: 1 }, priority: 0, runAt: at(0), maxAttempts: 3, ...overrides };
}

async function enqueue(store: MemoryStore, overrides: Partial<NewJob> = {}, now = at(0)): Promise<string> {
  const [result] = await store.enqueue([newJob(overrides)], { now });
  return result.id;
}

async function claim(store: MemoryStore, now: Date, leaseMs = 30_000): Promise<{ job: JobRecord; lease: { jobId: string; token: string } }> {
  const [job] = await store.claim({ owner: 'w1', queues: ['default'], names: ['send'], limit: 1, leaseUntil: new Date(now.getTime() + leaseMs), now });
  if (!job?.lease) throw new Error('expected a claimable job');
  return { job, lease: { jobId: job.id, token: job.lease.token } };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

describe('MemoryStore', () => {
  it('runs a job through enqueue, claim and complete', async () => {
    const store = new MemoryStore();
    const id = await enqueue(store);
    const { job, lease } = await claim(store, at(0));
    expect(job.id).toBe(id);
    await store.complete(lease, { result: { ok: true }, now: at(1) });
    expect(await store.getJob(id)).toMatchObject({ status: 'completed', result: { ok: true }, attempt: 1, finishedAt: at(1) });
  });

  it('keeps the dates of jobs enqueued together apart as each one moves on', async () => {
    // The records of one enqueue share their stored Dates: a write must replace a date, never change it in place.
    const store = new MemoryStore();
    const [a, b] = await store.enqueue([newJob(), newJob()], { now: at(0) });
    const { lease } = await claim(store, at(5));
    await store.complete(lease, { now: at(7) });
    const ran = await store.getJob(lease.jobId);
    const waiting = await store.getJob(lease.jobId === a!.id ? b!.id : a!.id);
    expect(ran).toMatchObject({ createdAt: at(0), runAt: at(0), startedAt: at(5), updatedAt: at(7), finishedAt: at(7) });
    expect(waiting).toMatchObject({ status: 'queued', createdAt: at(0), runAt: at(0), updatedAt: at(0) });
    ran!.createdAt.setTime(REFERENCE + HOUR);
    expect((await store.getJob(waiting!.id))?.createdAt).toEqual(at(0));
  });

  describe('retention', () => {
    it('removes completed jobs once their retention has passed at a later operation, freeing the key', async () => {
      const store = new MemoryStore({ retention: { completed: '1h' } });
      const id = await enqueue(store, { idempotencyKey: 'k' });
      const { lease } = await claim(store, at(0));
      await store.complete(lease, { now: at(10) });

      await enqueue(store, { name: 'other' }, at(10 + HOUR - 1));
      expect((await store.getJob(id))?.status).toBe('completed');
      const [dup] = await store.enqueue([newJob({ idempotencyKey: 'k' })], { now: at(10 + HOUR - 1) });
      expect(dup).toEqual({ id, deduplicated: true });

      const [fresh] = await store.enqueue([newJob({ idempotencyKey: 'k' })], { now: at(10 + HOUR) });
      expect(fresh.deduplicated).toBe(false);
      expect(await store.getJob(id)).toBeNull();
      expect((await store.stats()).queues.default).toEqual({ queued: 2 });
    });

    it('keeps a completed job past its retention until its dependents are settled', async () => {
      const store = new MemoryStore({ retention: { completed: '1h' } });
      const id = await enqueue(store);
      const [{ id: dependent }] = await store.enqueue([newJob({ name: 'after', dependsOn: [id] })], { now: at(0) });
      const { lease } = await claim(store, at(0));
      await store.complete(lease, { now: at(10) });
      await enqueue(store, { name: 'other' }, at(10 + HOUR));
      expect((await store.getJob(id))?.status).toBe('completed');
      expect(await store.settleDependents({ now: at(10 + HOUR) })).toBe(1);
      expect((await store.getJob(dependent))?.status).toBe('queued');
      expect(await store.getJob(id)).toBeNull();
    });

    it('removes dead letters once their retention has passed', async () => {
      const store = new MemoryStore({ retention: { dead: 1_000 } });
      const id = await enqueue(store);
      const { lease } = await claim(store, at(0));
      await store.deadLetter(lease, { reason: 'boom', now: at(100) });
      expect(await store.replayDeadLetter('unknown', at(1_099))).toBeNull();
      expect(await store.listDeadLetters({})).toHaveLength(1);
      expect(await store.replayDeadLetter(id, at(1_100))).toBeNull();
      expect(await store.getJob(id)).toBeNull();
      expect((await store.stats()).deadLetters).toBe(0);
    });

    it('keeps finished jobs forever without a retention', async () => {
      const store = new MemoryStore();
      const id = await enqueue(store);
      const { lease } = await claim(store, at(0));
      await store.complete(lease, { now: at(1) });
      await enqueue(store, {}, at(10_000 * HOUR));
      expect((await store.getJob(id))?.status).toBe('completed');
    });

    it('refuses a bad retention duration at construction', () => {
      let error: unknown;
      try {
        new MemoryStore({ retention: { completed: 'soon' } });
      } catch (e) {
        error = e;
      }
      expect(LoomError.is(error, 'INVALID_ARGUMENT')).toBe(true);
      expect((error as Error).message).toContain('retention.completed');
    });
  });

  describe('isolation', () => {
    it('copies everything in and out, including Dates a caller mutates later', async () => {
      const store = new MemoryStore();
      const now = at(0);
      const payload = { when: at(5), list: [{ a: 1 }] };
      const id = await enqueue(store, { payload }, now);
      now.setTime(0);
      payload.when.setTime(0);
      payload.list[0].a = 2;

      const { job, lease } = await claim(store, at(1));
      (job.payload as typeof payload).list.push({ a: 3 });
      job.lease!.until.setTime(0);
      const result = { total: [1] };
      await store.complete(lease, { result, now: at(2) });
      result.total.push(2);

      const stored = await store.getJob(id);
      expect(stored).toMatchObject({ createdAt: at(0), payload: { when: at(5), list: [{ a: 1 }] }, result: { total: [1] } });
      expect((stored!.payload as typeof payload).when).toBeInstanceOf(Date);
    });

    it('copies signal data and steps', async () => {
      const store = new MemoryStore();
      const id = await enqueue(store);
      const { lease } = await claim(store, at(0));
      const data = { v: 1 };
      await store.signal(id, { name: 's', data, now: at(1) });
      data.v = 2;
      const step = { name: 'x', kind: 'step' as const, status: 'completed' as const, result: { r: 1 }, at: at(2) };
      const stored = await store.recordStep(lease, step, at(2));
      step.result.r = 2;
      (stored.result as { r: number }).r = 3;
      expect(await store.getJob(id)).toMatchObject({ signals: [{ data: { v: 1 } }], steps: [{ result: { r: 1 } }] });
    });
  });

  it(`keeps the newest ${MEMORY_STORE_ERROR_HISTORY} errors`, async () => {
    const store = new MemoryStore();
    const id = await enqueue(store, { maxAttempts: 100 });
    for (let attempt = 1; attempt <= 30; attempt++) {
      const { lease } = await claim(store, at(attempt * 10));
      const error = { attempt, at: at(attempt * 10), name: 'Error', message: `failure ${attempt}` };
      await store.retry(lease, { runAt: at(attempt * 10), error, now: at(attempt * 10) });
    }
    const job = await store.getJob(id);
    expect(job?.errors).toHaveLength(MEMORY_STORE_ERROR_HISTORY);
    expect(job?.errors[0].attempt).toBe(30 - MEMORY_STORE_ERROR_HISTORY + 1);
    expect(job?.errors.at(-1)?.message).toBe('failure 30');
  });

  it("does not claim a job early when the caller's clock goes backwards", async () => {
    const store = new MemoryStore();
    const first = await enqueue(store, { runAt: at(0) });
    const later = await enqueue(store, { runAt: at(1_000) });
    expect((await claim(store, at(1_000))).job.id).toBe(first);
    const early = await store.claim({ owner: 'w', queues: ['default'], names: ['send'], limit: 5, leaseUntil: at(90_000), now: at(500) });
    expect(early).toEqual([]);
    expect((await claim(store, at(1_000))).job.id).toBe(later);
  });

  it('claims from the right lanes among many queues and names', async () => {
    const store = new MemoryStore();
    for (let q = 0; q < 5; q++) for (let n = 0; n < 5; n++) await enqueue(store, { queue: `q${q}`, name: `n${n}`, priority: q * 5 + n });
    const jobs = await store.claim({
      owner: 'w',
      queues: ['q1', 'q3'],
      names: ['n0', 'n4'],
      excludeNames: ['n0'],
      limit: 10,
      leaseUntil: at(1_000),
      now: at(0),
    });
    expect(jobs.map((j) => `${j.queue}/${j.name}`)).toEqual(['q3/n4', 'q1/n4']);
  });

  it('keeps listJobs by parent and by name right as jobs finish, die, come back and expire', async () => {
    const store = new MemoryStore({ retention: { completed: 1_000 } });
    const ids = await Promise.all([0, 1, 2].map((i) => enqueue(store, { parentId: 'p', payload: { i } }, at(i))));
    const byParent = async () => (await store.listJobs({ parentId: 'p' })).map((j) => j.id).sort();
    const activeByName = async () => (await store.listJobs({ name: 'send', status: ['queued', 'running', 'waiting'] })).map((j) => j.id).sort();

    const first = await claim(store, at(10));
    await store.complete(first.lease, { now: at(10) });
    const second = await claim(store, at(10));
    await store.deadLetter(second.lease, { reason: 'boom', now: at(10) });
    expect(await byParent()).toEqual([ids[0], ids[2]].sort());
    expect(await activeByName()).toEqual([ids[2]]);

    await store.replayDeadLetter(ids[1], at(20));
    expect(await byParent()).toEqual([...ids].sort());
    expect(await activeByName()).toEqual([ids[1], ids[2]].sort());

    await enqueue(store, { name: 'tick' }, at(1_010));
    expect(await byParent()).toEqual([ids[1], ids[2]].sort());
  });

  describe('input checks', () => {
    it('refuses a claim limit below 1', async () => {
      const store = new MemoryStore();
      const error = await rejection(store.claim({ owner: 'w', queues: ['default'], names: ['send'], limit: 0, leaseUntil: at(1), now: at(0) }));
      expect(LoomError.is(error, 'INVALID_ARGUMENT')).toBe(true);
    });

    it('refuses non-string or empty idempotency keys and stores nothing', async () => {
      const store = new MemoryStore();
      for (const key of ['', { $ne: null }]) {
        const error = await rejection(store.enqueue([newJob(), newJob({ idempotencyKey: key as string })], { now: at(0) }));
        expect(LoomError.is(error, 'INVALID_IDEMPOTENCY_KEY')).toBe(true);
      }
      expect(await store.listJobs({})).toEqual([]);
    });

    it('refuses invalid dates, priorities and attempts, naming them, and changes nothing', async () => {
      const store = new MemoryStore();
      const bad: Partial<NewJob>[] = [
        { runAt: new Date(Number.NaN) },
        { runAt: '2026-01-01' as unknown as Date },
        { priority: Number.NaN },
        { maxAttempts: 0 },
        { queue: '' },
      ];
      for (const overrides of bad) {
        const error = await rejection(store.enqueue([newJob(), newJob(overrides)], { now: at(0) }));
        expect(LoomError.is(error, 'INVALID_ARGUMENT')).toBe(true);
        expect((error as Error).message).toMatch(new RegExp(Object.keys(overrides)[0]));
      }
      expect(await store.listJobs({})).toEqual([]);

      const id = await enqueue(store);
      const { lease } = await claim(store, at(0));
      const before = await store.getJob(id);
      const invalid = new Date(Number.NaN);
      for (const attempt of [
        store.retry(lease, { runAt: invalid, error: { attempt: 1, at: at(1), name: 'E', message: 'm' }, now: at(1) }),
        store.sleep(lease, { runAt: invalid, now: at(1) }),
        store.extendLease(lease, invalid, at(1)),
        store.wait(lease, { for: { signal: 's' }, timeoutAt: invalid, now: at(1) }),
        store.claim({ owner: 'w', queues: ['default'], names: ['send'], limit: 1, leaseUntil: invalid, now: at(99_999) }),
      ]) {
        expect(LoomError.is(await rejection(attempt), 'INVALID_ARGUMENT')).toBe(true);
      }
      expect(await store.getJob(id)).toEqual(before);
    });

    it('refuses a cyclic payload with NOT_PLAIN_DATA and stores nothing', async () => {
      const store = new MemoryStore();
      const cyclic: Record<string, unknown> = { a: 1 };
      cyclic.self = cyclic;
      const error = await rejection(store.enqueue([newJob(), newJob({ payload: cyclic })], { now: at(0) }));
      expect(LoomError.is(error, 'NOT_PLAIN_DATA')).toBe(true);
      expect(await store.listJobs({})).toEqual([]);
    });

    it('refuses a cyclic step or error with NOT_PLAIN_DATA and leaves the job as it was', async () => {
      const store = new MemoryStore();
      const id = await enqueue(store);
      const { lease } = await claim(store, at(0));
      const before = await store.getJob(id);
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      const step = { name: 'nap', kind: 'sleep' as const, status: 'pending' as const, result: cyclic, at: at(1) };
      const error = { attempt: 1, at: at(1), name: 'Error', message: 'x', cause: cyclic };
      for (const attempt of [
        store.sleep(lease, { runAt: at(100), step, now: at(1) }),
        store.wait(lease, { for: { signal: 's' }, step, now: at(1) }),
        store.retry(lease, { runAt: at(100), error, now: at(1) }),
        store.deadLetter(lease, { reason: 'r', error, now: at(1) }),
      ]) {
        expect(LoomError.is(await rejection(attempt), 'NOT_PLAIN_DATA')).toBe(true);
      }
      expect(await store.getJob(id)).toEqual(before);
    });

    it('refuses to replay a dead letter whose key another job now holds, changing nothing', async () => {
      const store = new MemoryStore();
      const id = await enqueue(store, { idempotencyKey: 'k' });
      const { lease } = await claim(store, at(0));
      await store.deadLetter(lease, { reason: 'boom', now: at(1) });
      const holder = await enqueue(store, { idempotencyKey: 'k' }, at(2));
      const error = await rejection(store.replayDeadLetter(id, at(3)));
      expect(LoomError.is(error, 'INVALID_ARGUMENT')).toBe(true);
      expect((error as Error).message).toContain(holder);
      expect((await store.getJob(id))?.status).toBe('dead');
      expect(await store.listDeadLetters({})).toHaveLength(1);
    });
  });

  describe('withTransaction', () => {
    it('refuses a session from another store or after the transaction ended', async () => {
      const store = new MemoryStore();
      const other = new MemoryStore();
      let leaked: unknown;
      await other.withTransaction(async (session) => {
        leaked = session;
        const error = await rejection(store.enqueue([newJob()], { now: at(0), session }));
        expect(LoomError.is(error, 'INVALID_ARGUMENT')).toBe(true);
      });
      const error = await rejection(other.enqueue([newJob()], { now: at(0), session: leaked }));
      expect(LoomError.is(error, 'INVALID_ARGUMENT')).toBe(true);
      expect(await store.listJobs({})).toEqual([]);
      expect(await other.listJobs({})).toEqual([]);
    });

    it('deduplicates keys inside one transaction', async () => {
      const store = new MemoryStore();
      const [a, b] = await store.withTransaction(async (session) => [
        ...(await store.enqueue([newJob({ idempotencyKey: 'k' })], { now: at(0), session })),
        ...(await store.enqueue([newJob({ idempotencyKey: 'k' })], { now: at(0), session })),
      ]);
      expect(b).toEqual({ id: a.id, deduplicated: true });
      expect(await store.listJobs({})).toHaveLength(1);
    });

    it('rejects the commit with LEASE_LOST when the lease was taken over while the block ran', async () => {
      const store = new MemoryStore();
      const id = await enqueue(store);
      const { lease } = await claim(store, at(0), 1_000);
      const error = await rejection(
        store.withTransaction(async (session) => {
          await store.complete(lease, { result: 'late', now: at(500), session });
          await claim(store, at(2_000)); // the lease expired meanwhile and another worker took the job
        }),
      );
      expect(LoomError.is(error, 'LEASE_LOST')).toBe(true);
      expect(await store.getJob(id)).toMatchObject({ status: 'running', attempt: 2 });
    });

    it('applies nothing when a key was taken outside while the transaction ran', async () => {
      const store = new MemoryStore();
      await enqueue(store, { name: 'running' });
      const [running] = await store.claim({ owner: 'w', queues: ['default'], names: ['running'], limit: 1, leaseUntil: at(1_000), now: at(0) });
      const error = await rejection(
        store.withTransaction(async (session) => {
          await store.complete({ jobId: running.id, token: running.lease!.token }, { now: at(1), session });
          await store.enqueue([newJob({ idempotencyKey: 'k' })], { now: at(1), session });
          await store.enqueue([newJob({ idempotencyKey: 'k' })], { now: at(1) });
        }),
      );
      expect(LoomError.is(error, 'STORE_ERROR')).toBe(true);
      expect((await store.getJob(running.id))?.status).toBe('running');
      expect(await store.listJobs({ idempotencyKey: 'k' })).toHaveLength(1);
    });
  });

  describe('subscribe', () => {
    it('tells listeners after the operation when jobs become queued, until unsubscribed', async () => {
      const store = new MemoryStore();
      const events: { id: string; queue: string; runAt: Date }[] = [];
      const unsubscribe = store.subscribe((event) => events.push(event));
      const pending = store.enqueue([newJob({ queue: 'mail', runAt: at(5) })], { now: at(0) });
      expect(events).toEqual([]);
      const [{ id }] = await pending;
      await Promise.resolve();
      // The id lets an engine recognise the announcement of its own enqueue.
      expect(events).toEqual([{ id, queue: 'mail', runAt: at(5) }]);
      unsubscribe();
      await store.enqueue([newJob()], { now: at(0) });
      await Promise.resolve();
      expect(events).toHaveLength(1);
    });

    it("tells listeners of a transaction's enqueues only when it commits", async () => {
      const store = new MemoryStore();
      const events: string[] = [];
      store.subscribe((event) => events.push(event.queue));
      await rejection(
        store.withTransaction(async (session) => {
          await store.enqueue([newJob({ queue: 'rolled-back' })], { now: at(0), session });
          throw new Error('abort');
        }),
      );
      await store.withTransaction(async (session) => {
        await store.enqueue([newJob({ queue: 'committed' })], { now: at(0), session });
        await Promise.resolve();
        expect(events).toEqual([]);
      });
      await Promise.resolve();
      expect(events).toEqual(['committed']);
    });

    it("hands a throwing listener's error to onListenerError", async () => {
      const errors: unknown[] = [];
      const store = new MemoryStore({ onListenerError: (error) => errors.push(error) });
      const boom = new Error('listener failed');
      store.subscribe(() => {
        throw boom;
      });
      await store.enqueue([newJob()], { now: at(0) });
      await Promise.resolve();
      expect(errors).toEqual([boom]);
    });
  });
});
