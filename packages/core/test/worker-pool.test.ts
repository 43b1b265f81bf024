import 'reflect-metadata';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Job, LoomError, MemoryStore, type JobContext } from '@loom/core';
import { testHooks } from '@loom/core/internal';
import { createTestLoom, FakeClock, type TestLoom } from '@loom/testing';
import { deferred, type Deferred } from './deferred.js';
import { faultyStore } from './faulty-store.js';

/** Handler gates: each run of a gated job waits for the next gate the test opens. */
const gates: Deferred[] = [];
const started: string[] = [];
const signals: AbortSignal[] = [];
const gate = async (tag: string, ctx: JobContext): Promise<void> => {
  started.push(tag);
  signals.push(ctx.signal);
  const d = deferred();
  gates.push(d);
  await d.promise;
};
const openAll = (): void => gates.splice(0).forEach((g) => g.resolve());

@Job({ name: 'limited', concurrency: 2 })
class Limited {
  async run(p: { n: number }, ctx: JobContext): Promise<void> {
    await gate(`limited-${p.n}`, ctx);
  }
}

@Job({ name: 'free' })
class Free {
  async run(p: { n: number }, ctx: JobContext): Promise<void> {
    await gate(`free-${p.n}`, ctx);
  }
}

@Job({ name: 'polite-timeout', timeout: '5s', retries: 1, backoff: { type: 'fixed', delay: '1m' } })
class PoliteTimeout {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    signals.push(ctx.signal);
    await new Promise<void>((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as unknown)));
  }
}

@Job({ name: 'deaf-timeout', timeout: '5s', retries: 0 })
class DeafTimeout {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    await gate('deaf', ctx);
  }
}

let slowRuns = 0;
@Job({ name: 'slow-first', retries: 3 })
class SlowFirst {
  async run(_: undefined, ctx: JobContext): Promise<string> {
    slowRuns++;
    if (slowRuns === 1) await gate('slow-first', ctx);
    return `done by attempt ${ctx.attempt}`;
  }
}

@Job({ name: 'crashes-worker', retries: 0 })
class CrashesWorker {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    await gate('crash', ctx);
  }
}

let quickRuns = 0;
@Job({ name: 'quick' })
class Quick {
  async run(): Promise<string> {
    quickRuns++;
    return 'quick';
  }
}

const looms: TestLoom[] = [];
async function testLoom(...args: Parameters<typeof createTestLoom>): Promise<TestLoom> {
  const t = await createTestLoom(...args);
  looms.push(t);
  return t;
}

afterEach(async () => {
  openAll();
  for (const t of looms.splice(0)) await t.stop({ grace: 0 });
  started.length = 0;
  signals.length = 0;
  slowRuns = 0;
  quickRuns = 0;
});

describe('worker pool', () => {
  it('keeps per-job concurrency while other jobs run', async () => {
    const t = await testLoom({ jobs: [Limited, Free] });
    for (let n = 1; n <= 5; n++) await t.enqueue(Limited, { n });
    await t.enqueue(Free, { n: 1 });
    await t.settle();
    expect(started.filter((s) => s.startsWith('limited'))).toHaveLength(2);
    expect(started).toContain('free-1');
    gates[0]!.resolve();
    await t.settle();
    expect(started.filter((s) => s.startsWith('limited'))).toHaveLength(3);
    expect((await t.loom.stats()).inFlight).toBe(3);
  });

  it('keeps the engine concurrency', async () => {
    const t = await testLoom({ jobs: [Free], concurrency: 3 });
    await t.enqueueMany(
      Free,
      [1, 2, 3, 4, 5].map((n) => ({ n })),
    );
    await t.settle();
    expect(started).toHaveLength(3);
    const stats = await t.loom.stats();
    expect(stats.inFlight).toBe(3);
    expect(stats.queues.default).toMatchObject({ running: 3, queued: 2 });
    openAll();
    await t.settle();
    openAll();
    await t.runUntilIdle();
    expect(started).toHaveLength(5);
  });

  it('only claims from its queues', async () => {
    @Job({ name: 'other-queue', queue: 'reports' })
    class OtherQueue {
      async run(): Promise<void> {}
    }
    const store = new MemoryStore();
    const t = await testLoom({ jobs: [Quick, OtherQueue], queues: ['default'], store });
    const { id } = await t.enqueue(OtherQueue);
    await t.enqueue(Quick);
    await t.runUntilIdle();
    expect(quickRuns).toBe(1);
    expect((await t.getJob(id))?.status).toBe('queued');
  });

  describe('timeout', () => {
    it('aborts ctx.signal and fails the attempt with JobTimeoutError', async () => {
      const t = await testLoom({ jobs: [PoliteTimeout] });
      const { id } = await t.enqueue(PoliteTimeout);
      await t.advance('4999ms');
      expect(signals[0]?.aborted).toBe(false);
      await t.advance(1);
      expect(signals[0]?.aborted).toBe(true);
      expect(LoomError.is(signals[0]?.reason, 'JOB_TIMEOUT')).toBe(true);
      const job = await t.getJob(id);
      expect(job?.status).toBe('queued');
      expect(job?.errors[0]).toMatchObject({ attempt: 1, code: 'JOB_TIMEOUT', name: 'JobTimeoutError' });
      expect(job?.errors[0]?.message).toMatch(/timed out after 5000 ms/);
    });

    it('stops waiting for a handler that ignores the signal', async () => {
      const t = await testLoom({ jobs: [DeafTimeout] });
      const { id } = await t.enqueue(DeafTimeout);
      await t.advance('5s');
      expect(signals[0]?.aborted).toBe(true);
      expect((await t.getJob(id))?.status).toBe('dead');
      // The handler still runs: its slot stays taken (one process never runs a job twice at once), and a warning names the job.
      expect(testHooks(t.loom).inFlight()).toMatchObject([{ jobId: id }]);
      expect(t.logs.some((e) => e.level === 'warn' && String(e.msg).includes(`Job ${id}: timed out after`) && String(e.msg).includes('slot stays taken'))).toBe(
        true,
      );
      // The handler finishing later frees the slot and changes nothing else.
      openAll();
      await t.settle();
      expect(testHooks(t.loom).inFlight()).toEqual([]);
      expect((await t.getJob(id))?.status).toBe('dead');
    });
  });

  describe('leases', () => {
    it("lets another engine take over when the lease expires, and refuses the first run's completion", async () => {
      const clock = new FakeClock();
      const shared = new MemoryStore();
      // Engine A cannot reach the store to extend its lease (a partition); its handler hangs.
      const partitioned = faultyStore(shared, { heartbeatMany: Infinity });
      // concurrency 1: the hanging run fills A, so only B can take the job over.
      const a = await testLoom({ jobs: [SlowFirst], store: partitioned.store, clock, lease: '30s', concurrency: 1 });
      const b = await testLoom({ jobs: [SlowFirst], store: shared, clock, lease: '30s', start: false });
      const completedByA: string[] = [];
      a.loom.on('job:completed', (e) => completedByA.push(e.job.id));
      const { id } = await a.enqueue(SlowFirst);
      await a.settle();
      expect(started).toEqual(['slow-first']);

      await a.advance('30s');
      expect(partitioned.caused.heartbeatMany).toBeGreaterThanOrEqual(2);
      expect(signals[0]?.aborted).toBe(true);
      expect(LoomError.is(signals[0]?.reason, 'LEASE_LOST')).toBe(true);

      await a.advance(1);
      await b.loom.start();
      await b.runUntilIdle();
      const job = await b.getJob(id);
      expect(job).toMatchObject({ status: 'completed', attempt: 2, result: 'done by attempt 2' });

      // The first run now finishes: the store refuses its completion and nothing is counted.
      openAll();
      await a.settle();
      expect(await b.getJob(id)).toMatchObject({ status: 'completed', attempt: 2, result: 'done by attempt 2' });
      expect(completedByA).toEqual([]);
      expect(a.logs.some((e) => e.level === 'warn' && e.fields.jobId === id && /lease was lost/.test(e.msg))).toBe(true);
    });

    it('dead-letters a job whose lease expired on every attempt', async () => {
      const clock = new FakeClock();
      const shared = new MemoryStore();
      const a = await testLoom({ jobs: [CrashesWorker], store: faultyStore(shared, { heartbeatMany: Infinity }).store, clock, lease: '30s', concurrency: 1 });
      const { id } = await a.enqueue(CrashesWorker);
      await a.advance('31s');
      const b = await testLoom({ jobs: [CrashesWorker], store: shared, clock, lease: '30s', start: false });
      const dead: string[] = [];
      b.loom.on('job:dead', (e) => dead.push(e.reason));
      await b.loom.start();
      await b.runUntilIdle();
      const job = await b.getJob(id);
      expect(job?.status).toBe('dead');
      expect(job?.deadReason).toMatch(/^lease expired 1 time: the job crashed or stalled its worker/);
      expect(dead).toHaveLength(1);
      expect(started).toEqual(['crash']);
    });

    it('treats the lease as lost when extending it hangs past the lease end', async () => {
      const shared = new MemoryStore();
      const hanging = new Proxy(shared, {
        get: (target, prop) => {
          if (prop === 'heartbeatMany') return () => new Promise(() => {});
          const value = Reflect.get(target, prop, target) as unknown;
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        },
      });
      const t = await testLoom({ jobs: [Free], store: hanging, lease: '30s', concurrency: 1, hungStoreCall: '200ms' });
      await t.enqueue(Free, { n: 1 });
      await t.settle();
      // Moving the clock directly: the harness would (rightly) wait for the hanging call first.
      t.clock.advance('29s');
      expect(signals[0]?.aborted).toBe(false);
      t.clock.advance('1s');
      expect(signals[0]?.aborted).toBe(true);
      expect(String((signals[0]?.reason as Error | undefined)?.message)).toMatch(/lease lost \(the lease ran out before this worker could extend it\)/);
    });

    it('renews the lease while a long handler runs', async () => {
      const t = await testLoom({ jobs: [SlowFirst], lease: '30s' });
      const { id } = await t.enqueue(SlowFirst);
      await t.advance('5m');
      const job = await t.getJob(id);
      expect(job?.status).toBe('running');
      expect(job?.lease?.until.getTime()).toBeGreaterThan(t.clock.now().getTime());
      expect(signals[0]?.aborted).toBe(false);
      openAll();
      await t.runUntilIdle();
      expect((await t.getJob(id))?.status).toBe('completed');
    });
  });

  describe('graceful stop', () => {
    it('lets runs in flight finish within the grace and claims nothing new', async () => {
      const t = await testLoom({ jobs: [Free], concurrency: 1 });
      const first = await t.enqueue(Free, { n: 1 });
      await t.settle();
      const second = await t.enqueue(Free, { n: 2 });
      let stopped = false;
      const stopping = t.loom.stop({ grace: '10s' }).then(() => (stopped = true));
      await t.advance('5s');
      expect(stopped).toBe(false);
      expect((await t.getJob(first.id))?.status).toBe('running');
      openAll();
      await t.settle();
      await stopping;
      expect((await t.getJob(first.id))?.status).toBe('completed');
      expect((await t.getJob(second.id))?.status).toBe('queued');
      expect(started).toEqual(['free-1']);
    });

    it('releases runs still going after the grace, without acking them', async () => {
      const store = new MemoryStore();
      const clock = new FakeClock();
      const t = await testLoom({ jobs: [Free], store, clock });
      const { id } = await t.enqueue(Free, { n: 1 });
      await t.settle();
      const stopping = t.loom.stop({ grace: '10s' });
      await t.advance('10s');
      await stopping;
      expect(signals[0]?.aborted).toBe(true);
      expect(LoomError.is(signals[0]?.reason, 'ENGINE_STOPPED')).toBe(true);
      let job = await t.getJob(id);
      expect(job).toMatchObject({ status: 'queued', attempt: 0 });
      // stop() did not wait for the handler that ignores its signal, and said so, naming the job.
      expect(t.logs.some((e) => e.level === 'warn' && String(e.msg).includes(`Job ${id}: the shutdown grace ended, but its handler ignores ctx.signal`))).toBe(
        true,
      );
      // The abandoned handler finishing later must not complete the job.
      openAll();
      await t.settle();
      job = await t.getJob(id);
      expect(job?.status).toBe('queued');
      // Another instance takes it at once, and it runs to completion there.
      const next = await testLoom({ jobs: [Free], store, clock });
      await next.settle();
      openAll();
      await next.runUntilIdle();
      expect(await next.getJob(id)).toMatchObject({ status: 'completed', attempt: 1 });
    });
  });

  describe('store failures', () => {
    it('keeps claiming after claim errors, with growing delays', async () => {
      const faulty = faultyStore(new MemoryStore(), { claim: 3 });
      const t = await testLoom({ jobs: [Quick], store: faulty.store, pollInterval: '1s', start: false });
      const errors: string[] = [];
      t.loom.on('worker:error', (e) => errors.push(e.operation));
      await t.loom.start();
      await t.enqueue(Quick);
      await t.settle();
      expect(quickRuns).toBe(0);
      await t.advance('10s');
      expect(faulty.caused.claim).toBe(3);
      expect(errors).toEqual(['claim', 'claim', 'claim']);
      expect(quickRuns).toBe(1);
      // One outage, one line when it begins and one when it ends; each failed claim at debug (issue 28).
      expect(t.logs.filter((e) => e.level === 'debug' && /Claiming jobs failed/.test(e.msg))).toHaveLength(3);
      expect(t.logs.filter((e) => e.level === 'warn' || e.level === 'error').map((e) => e.msg)).toEqual([
        expect.stringMatching(/^The store is not answering \(claim: /),
        expect.stringMatching(/^The store answers again after /),
      ]);
    });

    it('retries a failed completion and completes the job once', async () => {
      const faulty = faultyStore(new MemoryStore(), { completeMany: 2 });
      const t = await testLoom({ jobs: [Quick], store: faulty.store });
      const completed: string[] = [];
      t.loom.on('job:completed', (e) => completed.push(e.job.id));
      const { id } = await t.enqueue(Quick);
      await t.advance('1s');
      expect(faulty.caused.completeMany).toBe(2);
      expect(await t.getJob(id)).toMatchObject({ status: 'completed', attempt: 1, result: 'quick' });
      expect(completed).toEqual([id]);
      expect(quickRuns).toBe(1);
    });
  });
});
