import 'reflect-metadata';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Job, MemoryStore, PermanentError, type JobContext, type StoreStats } from '@loom/core';
import { createTestLoom, FakeClock } from '@loom/testing';
import { installOtelSdk, type OtelSdk, type Point } from './otel-sdk.js';

const clock = new FakeClock();

@Job({ name: 'resize', queue: 'images', retries: 1, backoff: { type: 'fixed', delay: '5s' } })
class Resize {
  async run(payload: { ms: number; fail?: 'once' | 'always' | 'permanent' }, ctx: JobContext): Promise<void> {
    clock.advance(payload.ms); // the handler "works" this long
    if (payload.fail === 'permanent') throw new PermanentError('not an image');
    if (payload.fail === 'always' || (payload.fail === 'once' && ctx.attempt === 1)) throw new Error('decoder crashed');
  }
}

@Job({ name: 'nap', queue: 'images' })
class Nap {
  async run(_: unknown, ctx: JobContext): Promise<void> {
    clock.advance(30);
    await ctx.sleep('a-while', '1h');
  }
}

/** A MemoryStore that counts `stats()` calls, or fails them, or never answers the next one. */
class StatsStore extends MemoryStore {
  calls = 0;
  failing = false;
  hangOnce = false;
  override stats(): Promise<StoreStats> {
    this.calls++;
    if (this.hangOnce) {
      this.hangOnce = false;
      return new Promise(() => {});
    }
    if (this.failing) return Promise.reject(new Error('connection reset'));
    return super.stats();
  }
}

const IMAGES = { 'loom.job.name': 'resize', 'messaging.destination.name': 'images' };

function byAttributes(points: Point[]): Array<[Record<string, unknown>, Point['value']]> {
  return points.map((p) => [p.attributes, p.value]);
}

describe('metrics (OpenTelemetry SDK registered)', () => {
  let sdk: OtelSdk;
  beforeEach(() => {
    sdk = installOtelSdk();
    clock.set('2026-01-01T00:00:00Z');
  });
  afterEach(() => sdk.uninstall());

  it('counts completed jobs, failed attempts and dead jobs by job name and queue', async () => {
    const t = await createTestLoom({ jobs: [Resize], clock });
    await t.enqueue(Resize, { ms: 10 });
    await t.enqueue(Resize, { ms: 10 });
    await t.enqueue(Resize, { ms: 10, fail: 'once' });
    await t.enqueue(Resize, { ms: 10, fail: 'always' });
    await t.enqueue(Resize, { ms: 10, fail: 'permanent' });
    await t.runUntilIdle();
    await t.advance('5s');

    expect(byAttributes(await sdk.points('loom.jobs.completed'))).toEqual([[IMAGES, 3]]);
    expect(byAttributes(await sdk.points('loom.jobs.failed'))).toEqual([[IMAGES, 4]]); // once, always twice, permanent
    expect(byAttributes(await sdk.points('loom.jobs.dead'))).toEqual([[IMAGES, 2]]);
    await t.stop();
  });

  it('the counters are running totals: each collection reports every job counted so far', async () => {
    const t = await createTestLoom({ jobs: [Resize], clock });
    expect(await sdk.points('loom.jobs.completed')).toEqual([]); // no series before its first job
    await t.enqueue(Resize, { ms: 10 });
    await t.runUntilIdle();
    expect(byAttributes(await sdk.points('loom.jobs.completed'))).toEqual([[IMAGES, 1]]);
    await t.enqueue(Resize, { ms: 10 });
    await t.enqueue(Resize, { ms: 10 });
    await t.runUntilIdle();
    expect(byAttributes(await sdk.points('loom.jobs.completed'))).toEqual([[IMAGES, 3]]);
    expect(await sdk.points('loom.jobs.dead')).toEqual([]);
    await t.stop();
  });

  it('two engines in one process running the same job name count into one series', async () => {
    const a = await createTestLoom({ jobs: [Resize], clock });
    const b = await createTestLoom({ jobs: [Resize], clock });
    await a.enqueue(Resize, { ms: 10 });
    await a.enqueue(Resize, { ms: 10, fail: 'permanent' });
    await b.enqueue(Resize, { ms: 10 });
    await b.enqueue(Resize, { ms: 10 });
    await b.enqueue(Resize, { ms: 10 });
    await a.runUntilIdle();
    await b.runUntilIdle();
    expect(byAttributes(await sdk.points('loom.jobs.completed'))).toEqual([[IMAGES, 4]]);
    expect(byAttributes(await sdk.points('loom.jobs.dead'))).toEqual([[IMAGES, 1]]);
    await b.stop();
    // A stopped engine's jobs stay counted, as a counter's adds do.
    expect(byAttributes(await sdk.points('loom.jobs.completed'))).toEqual([[IMAGES, 4]]);
    await a.stop();
  });

  it('loom.job.duration: ms from claim to stored outcome, by outcome; loom.job.wait: ms from runAt to the claim', async () => {
    // One at a time, so each handler's clock advance is its own duration.
    const t = await createTestLoom({ jobs: [Resize, Nap], clock, start: false, concurrency: 1 });
    await t.enqueue(Resize, { ms: 120 });
    await t.enqueue(Resize, { ms: 40, fail: 'permanent' });
    await t.enqueue(Nap, {});
    clock.advance(2_000); // the engine starts two seconds after the jobs became due
    await t.loom.start();
    await t.runUntilIdle();

    const duration = await sdk.metric('loom.job.duration');
    expect(duration?.descriptor.unit).toBe('ms');
    expect(byAttributes(await sdk.points('loom.job.duration'))).toEqual(
      expect.arrayContaining([
        [
          { ...IMAGES, 'loom.job.outcome': 'completed' },
          { count: 1, sum: 120 },
        ],
        [
          { ...IMAGES, 'loom.job.outcome': 'dead' },
          { count: 1, sum: 40 },
        ],
        [
          { 'loom.job.name': 'nap', 'messaging.destination.name': 'images', 'loom.job.outcome': 'suspended' },
          { count: 1, sum: 30 },
        ],
      ]),
    );
    // Claimed in order, each once the previous one finished: 2,000 ms, then 2,120, then 2,160 after runAt.
    expect(byAttributes(await sdk.points('loom.job.wait'))).toEqual(
      expect.arrayContaining([
        [IMAGES, { count: 2, sum: 2_000 + 2_120 }],
        [
          { 'loom.job.name': 'nap', 'messaging.destination.name': 'images' },
          { count: 1, sum: 2_160 },
        ],
      ]),
    );
    expect((await sdk.metric('loom.job.wait'))?.descriptor.unit).toBe('ms');
    await t.stop();
  });

  it('loom.queue.depth: jobs per queue and status, and dead letters, from one store.stats() per collection', async () => {
    const store = new StatsStore();
    const t = await createTestLoom({ jobs: [Resize, Nap], clock, store });
    await t.enqueue(Resize, { ms: 1 });
    await t.enqueue(Resize, { ms: 1, fail: 'permanent' });
    await t.enqueue(Nap, {});
    await t.enqueue(Resize, { ms: 1 }, { delay: '1h' });
    await t.runUntilIdle();

    store.calls = 0;
    const depth = await sdk.points('loom.queue.depth');
    expect(store.calls).toBe(1);
    expect(byAttributes(depth)).toEqual(
      expect.arrayContaining([
        [{ 'messaging.destination.name': 'images', 'loom.job.status': 'completed' }, 1],
        [{ 'messaging.destination.name': 'images', 'loom.job.status': 'queued' }, 2], // the delayed one and the sleeper
        [{ 'loom.job.status': 'dead' }, 1],
      ]),
    );
    await t.stop();
    // A stopped engine no longer reads its store.
    store.calls = 0;
    await sdk.points('loom.queue.depth');
    expect(store.calls).toBe(0);
  });

  it('a failing store.stats() is logged and the collection reports no depth', async () => {
    const store = new StatsStore();
    store.failing = true;
    const t = await createTestLoom({ jobs: [Resize], clock, store });
    expect(await sdk.points('loom.queue.depth')).toEqual([]);
    expect(t.logs.find((e) => e.level === 'warn' && e.msg.includes('loom.queue.depth'))?.fields).toMatchObject({
      err: expect.objectContaining({ message: 'connection reset' }),
    });
    await t.stop();
  });

  it('a store.stats() that never answers is given up after 30 s, and the next collection reads again', async () => {
    const store = new StatsStore();
    const t = await createTestLoom({ jobs: [Resize], clock, store, hungStoreCall: '200ms' });
    await t.enqueue(Resize, { ms: 1 });
    await t.runUntilIdle();
    store.calls = 0;
    store.hangOnce = true;
    const first = sdk.points('loom.queue.depth');
    while (store.calls === 0) await Promise.resolve(); // the collection has asked the store
    clock.advance(30_000);
    expect(await first).toEqual([]);
    expect(t.logs.find((e) => e.level === 'warn' && e.msg.includes('loom.queue.depth'))?.fields).toMatchObject({
      err: expect.objectContaining({ message: 'store.stats did not answer within 30000 ms; the engine stopped waiting for it' }),
    });
    expect(byAttributes(await sdk.points('loom.queue.depth'))).toContainEqual([{ 'messaging.destination.name': 'images', 'loom.job.status': 'completed' }, 1]);
    expect(store.calls).toBe(2);
    await t.stop();
  });
});
