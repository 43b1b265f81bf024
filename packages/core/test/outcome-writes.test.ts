import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, LoomError, MemoryStore, type JobStore } from '@loom/core';
import { testHooks } from '@loom/core/internal';
import { createTestLoom } from '@loom/testing';

// Issue 12, defect 1: an outcome write that keeps failing must not hold the job (and its worker
// slot) forever. Its retries end with the lease as it stood when settling began; a failure the
// store calls final fails the attempt; a result the job record cannot hold fails the attempt.

let runs = 0;
let result: unknown = 'done';

@Job({ name: 'outcome-job', retries: 1 })
class OutcomeJob {
  async run(): Promise<unknown> {
    runs++;
    return result;
  }
}

/** A MemoryStore whose `completeMany` (the engine's completions) fails `failures` times with `error` (forever with Infinity). */
function failingComplete(failures: number, error: () => Error, transient?: (err: unknown) => boolean): { store: JobStore; calls: () => number } {
  const store = new MemoryStore();
  let calls = 0;
  const wrapped = new Proxy(store, {
    get(target, prop) {
      if (prop === 'completeMany') {
        return (...args: Parameters<MemoryStore['completeMany']>) => (++calls <= failures ? Promise.reject(error()) : target.completeMany(...args));
      }
      if (prop === 'isTransientError') return transient;
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: wrapped, calls: () => calls };
}

describe('outcome writes that keep failing', () => {
  it('stop at the end of the lease and free the slot; the job runs again and ends dead, never stuck running', async () => {
    runs = 0;
    result = 'done';
    const { store, calls } = failingComplete(Infinity, () => new Error('connection reset during complete'));
    const t = await createTestLoom({ jobs: [OutcomeJob], store, lease: '30s', concurrency: 1 });
    const { id } = await t.enqueue(OutcomeJob, undefined);
    await t.settle();
    expect(runs).toBe(1);
    // Retried with backoff while the lease lasts, never past it: the heartbeats stopped when settling began.
    await t.advance('29s');
    expect(testHooks(t.loom).inFlight()).toHaveLength(1);
    const attemptsSoFar = calls();
    expect(attemptsSoFar).toBeGreaterThan(3);
    await t.advance('2s');
    // Attempt 1 gave its slot up (concurrency 1), so attempt 2 could be claimed.
    expect(testHooks(t.loom).inFlight()).toMatchObject([{ jobId: id, attempt: 2 }]);
    expect(t.logs.some((e) => e.level === 'error' && String(e.msg).includes(`Job ${id}: could not complete it before its lease ran out`))).toBe(true);
    // The lease ended, so the job is claimable again: attempt 2 runs, fails to store the same way.
    expect(runs).toBe(2);
    await t.advance('31s');
    // Attempt 3 exceeds retries + 1: the job goes to the dead letters instead of looping.
    const job = await t.getJob(id);
    expect(job).toMatchObject({ status: 'dead' });
    expect(job?.deadReason).toMatch(/lease expired/);
    await t.stop();
  });

  it('fail the attempt at once when the store says the failure is final', async () => {
    runs = 0;
    result = 'done';
    const final = (): Error => Object.assign(new Error('Resulting document after update is larger than 16777216'), { code: 17419 });
    const { store } = failingComplete(1, final, (err) => (err as { code?: number }).code !== 17419);
    const t = await createTestLoom({ jobs: [OutcomeJob], store, lease: '30s' });
    const { id } = await t.enqueue(OutcomeJob, undefined);
    await t.runUntilIdle();
    const job = await t.getJob(id);
    expect(job).toMatchObject({ status: 'queued', attempt: 1 });
    expect(job?.errors).toHaveLength(1);
    expect(job?.errors[0]).toMatchObject({ code: 'OUTCOME_NOT_STORED' });
    expect(job?.errors[0]?.message).toMatch(/refused to complete it: Resulting document after update is larger/);
    // The retry runs and completes (the store accepts the second completion).
    await t.advance('1m');
    expect(await t.getJob(id)).toMatchObject({ status: 'completed', attempt: 2 });
    expect(runs).toBe(2);
    await t.stop();
  });
});

/** A MemoryStore that states no `payloadLimits`: every value counts inline against one 16 MiB record, as before offloading. */
function inlineStore(): JobStore {
  const store = new MemoryStore();
  return new Proxy(store, {
    get: (target, key) => {
      if (key === 'payloadLimits') return undefined;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe('a result the job record cannot hold', () => {
  it('fails the attempt with JOB_TOO_LARGE, counting payload, steps and result together', async () => {
    runs = 0;
    // Each under 16 MiB alone; together over it.
    result = 'r'.repeat(9 * 1024 * 1024);
    const t = await createTestLoom({ jobs: [OutcomeJob], store: inlineStore() });
    const { id } = await t.enqueue(OutcomeJob, { blob: 'p'.repeat(8 * 1024 * 1024) } as never);
    await t.runUntilIdle();
    const job = await t.getJob(id);
    expect(job?.status).toBe('queued');
    expect(job?.result).toBeUndefined();
    expect(job?.errors[0]).toMatchObject({ code: 'JOB_TOO_LARGE' });
    expect(job?.errors[0]?.message).toMatch(/payload \d+, steps \d+, errors \d+, signals \d+, result \d+/);
    expect(LoomError.is(t.logs.find((e) => e.level === 'warn' && e.fields.err)?.fields.err, 'JOB_TOO_LARGE')).toBe(true);
    await t.stop();
  });

  it('counts a payload and a result over the offload threshold as their references: the job completes', async () => {
    runs = 0;
    result = 'r'.repeat(9 * 1024 * 1024);
    const t = await createTestLoom({ jobs: [OutcomeJob] }); // MemoryStore: offloadThreshold 256 KiB, maxPayloadSize 64 MiB
    const { id } = await t.enqueue(OutcomeJob, { blob: 'p'.repeat(8 * 1024 * 1024) } as never);
    await t.runUntilIdle();
    const job = await t.getJob(id);
    expect(job?.status).toBe('completed');
    expect((job?.result as string).length).toBe(9 * 1024 * 1024);
    await t.stop();
  });
});
