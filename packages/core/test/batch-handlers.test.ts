import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, MemoryStore, type BatchContext, type BatchItem } from '@loom/core';
import { createTestLoom } from '@loom/testing';

// @Job({ batch }) with runBatch (FLOWS.md, issue 31 item 3), on a MemoryStore and a FakeClock.

const calls: number[][] = [];

@Job({ name: 'index-doc', batch: { size: 5 }, retries: 1, backoff: { type: 'fixed', delay: '1s' } })
class IndexDoc {
  async runBatch(items: BatchItem<{ n: number }>[], ctx: BatchContext): Promise<Array<unknown>> {
    expect(ctx.name).toBe('index-doc');
    calls.push(items.map((item) => item.payload.n));
    // n = 3 fails every attempt; n = 4 fails its first attempt only.
    return items.map(({ payload, attempt }) => (payload.n === 3 || (payload.n === 4 && attempt === 1) ? new Error(`doc ${payload.n} is bad`) : payload.n * 10));
  }
}

@Job({ name: 'slow-index', batch: { size: 4, wait: '1s' } })
class SlowIndex {
  async runBatch(items: BatchItem<number>[]): Promise<unknown[]> {
    calls.push(items.map((item) => item.payload));
    return items.map((item) => item.payload);
  }
}

@Job({ name: 'broken-index', batch: { size: 10 }, retries: 0 })
class BrokenIndex {
  async runBatch(items: BatchItem<number>[]): Promise<unknown[]> {
    calls.push(items.map((item) => item.payload));
    return items.slice(1); // one entry short
  }
}

@Job({ name: 'single' })
class Single {
  async run(): Promise<string> {
    return 'single';
  }
}

describe('batch handlers', () => {
  it('hands up to size due jobs to one runBatch call; each job gets its own outcome', async () => {
    calls.length = 0;
    const t = await createTestLoom({ jobs: [IndexDoc, Single], start: false, concurrency: 2 });
    const ids = await Promise.all(Array.from({ length: 7 }, (_, n) => t.enqueue(IndexDoc, { n })));
    const single = await t.enqueue(Single);
    await t.start();
    await t.runUntilIdle();
    // Two calls of at most 5 (7 due jobs), though the engine runs 2 at once: a call is one run.
    expect(calls.slice(0, 2).map((c) => c.length)).toEqual([5, 2]);
    expect((await t.getJob(ids[0]!.id))?.result).toBe(0);
    expect(await t.getJob(ids[6]!.id)).toMatchObject({ status: 'completed', result: 60 });
    // A bad item fails alone and retries on its own backoff.
    expect(await t.getJob(ids[3]!.id)).toMatchObject({ status: 'queued', attempt: 1 });
    expect(await t.getJob(ids[4]!.id)).toMatchObject({ status: 'queued', attempt: 1 });
    expect(await t.getJob(single.id)).toMatchObject({ status: 'completed', result: 'single' });
    await t.advance('1s');
    expect(calls[2]!.sort()).toEqual([3, 4]);
    expect(await t.getJob(ids[4]!.id)).toMatchObject({ status: 'completed', result: 40, attempt: 2 });
    // Out of attempts: a dead letter of its own.
    expect(await t.getJob(ids[3]!.id)).toMatchObject({ status: 'dead', attempt: 2 });
    expect((await t.getJob(ids[3]!.id))?.errors.map((e) => e.message)).toEqual(['doc 3 is bad', 'doc 3 is bad']);
    await t.stop();
  });

  it('a backlog larger than one call drains call after call, without waiting for a poll', async () => {
    calls.length = 0;
    // Concurrency 1: one call at a time, so every call after the first needs a claim when one ends.
    const t = await createTestLoom({ jobs: [IndexDoc, Single], start: false, concurrency: 1 });
    await t.enqueueMany(
      IndexDoc,
      Array.from({ length: 23 }, (_, i) => ({ n: 10 + i })),
    );
    await t.start();
    await t.runUntilIdle(); // the FakeClock stands still: no poll fires
    expect(calls.map((c) => c.length)).toEqual([5, 5, 5, 5, 3]);
    expect((await t.jobs.list({ status: 'completed', limit: 100 })).jobs).toHaveLength(23);
    await t.stop();
  });

  it('a call holds its unit of concurrency until its jobs’ outcomes are stored, not only until runBatch answers', async () => {
    calls.length = 0;
    // A store whose completions wait until the test lets them through (a slow database).
    const memory = new MemoryStore();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const store = new Proxy(memory, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== 'function') return value;
        if (prop !== 'completeMany' && prop !== 'complete') return (value as (...a: unknown[]) => unknown).bind(target);
        return async (...args: unknown[]) => {
          await gate;
          return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        };
      },
    });
    const t = await createTestLoom({ jobs: [IndexDoc], store, start: false, concurrency: 1, hungStoreCall: '50ms' });
    await t.enqueueMany(
      IndexDoc,
      Array.from({ length: 20 }, (_, i) => ({ n: 10 + i })),
    );
    await t.start();
    await t.settle();
    // The first call answered; its five jobs wait for their outcomes to be stored. With concurrency
    // 1, no second call starts meanwhile: at most concurrency x size jobs are in flight.
    expect(calls.map((c) => c.length)).toEqual([5]);
    expect((await t.jobs.list({ status: 'running', limit: 100 })).jobs).toHaveLength(5);
    release();
    await t.runUntilIdle();
    expect(calls.map((c) => c.length)).toEqual([5, 5, 5, 5]);
    expect((await t.jobs.list({ status: 'completed', limit: 100 })).jobs).toHaveLength(20);
    await t.stop();
  });

  it('with wait, the first job waits for more until the call is full or the wait has passed', async () => {
    calls.length = 0;
    const t = await createTestLoom({ jobs: [SlowIndex] });
    await t.enqueue(SlowIndex, 1);
    await t.advance('100ms');
    expect(calls).toEqual([]);
    await t.enqueue(SlowIndex, 2);
    await t.advance('400ms');
    expect(calls).toEqual([]);
    await t.advance('500ms');
    expect(calls).toEqual([[1, 2]]);
    for (let n = 3; n <= 6; n++) await t.enqueue(SlowIndex, n);
    await t.advance('10ms');
    expect(calls[1]).toEqual([3, 4, 5, 6]); // full: no wait
    await t.stop();
  });

  it('an answer that is not one entry per item fails every item of the call', async () => {
    calls.length = 0;
    const t = await createTestLoom({ jobs: [BrokenIndex], start: false });
    const [a, b] = await Promise.all([t.enqueue(BrokenIndex, 1), t.enqueue(BrokenIndex, 2)]);
    await t.start();
    await t.runUntilIdle();
    for (const id of [a!.id, b!.id]) {
      const job = await t.getJob(id);
      expect(job).toMatchObject({ status: 'dead' });
      expect(job?.errors[0]).toMatchObject({ code: 'INVALID_BATCH' });
    }
    await t.stop();
  });

  it('refuses a batch job class without runBatch', async () => {
    @Job({ name: 'no-run-batch', batch: { size: 2 } })
    class NoRunBatch {
      async run(): Promise<void> {}
    }
    await expect(createTestLoom({ jobs: [NoRunBatch] })).rejects.toMatchObject({ code: 'INVALID_JOB_CLASS' });
  });
});
