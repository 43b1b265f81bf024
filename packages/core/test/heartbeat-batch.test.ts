import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, LoomError, MemoryStore, type HeartbeatItem, type JobContext, type JobStore } from '@loom/core';
import { createTestLoom, FakeClock } from '@loom/testing';
import { HeartbeatBatch } from '../src/engine/heartbeat-batch.js';

const at = (ms: number): Date => new Date(Date.UTC(2026, 0, 1) + ms);

/** A store that records the size of each heartbeatMany (and counts single extendLease calls). */
function countingStore(inner: JobStore): { store: JobStore; batches: number[]; single: number[] } {
  const batches: number[] = [];
  const single: number[] = [];
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop === 'heartbeatMany') {
        return (items: HeartbeatItem[], now: Date) => {
          batches.push(items.length);
          return target.heartbeatMany(items, now);
        };
      }
      if (prop === 'extendLease') single.push(1);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store, batches, single };
}

const signals: AbortSignal[] = [];
const gates: Array<() => void> = [];
@Job({ name: 'long-beat', retries: 0 })
class LongBeat {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    signals.push(ctx.signal);
    await new Promise<void>((resolve) => {
      gates.push(resolve);
      ctx.signal.addEventListener('abort', () => resolve());
    });
  }
}

async function claimed(memory: MemoryStore, n: number) {
  await memory.enqueue(
    Array.from({ length: n }, (_, i) => ({ name: 'j', queue: 'q', payload: { i }, priority: 0, runAt: at(0), maxAttempts: 3 })),
    { now: at(0) },
  );
  return memory.claim({ owner: 'w', queues: ['q'], names: ['j'], limit: n, leaseUntil: at(30_000), now: at(0) });
}

describe('HeartbeatBatch (batched heartbeats on a shared beat)', () => {
  it('sends the heartbeats due at one instant as one heartbeatMany, and brings a later run onto the shared beat', async () => {
    const memory = new MemoryStore();
    const { store, batches } = countingStore(memory);
    const jobs = await claimed(memory, 3);
    const clock = new FakeClock(at(0));
    const batch = new HeartbeatBatch({ store, clock, intervalMs: 10_000 });
    const beats: number[][] = [[], [], []];
    const beat = (i: number): void => {
      const now = clock.now().getTime();
      beats[i]!.push(now - at(0).getTime());
      void batch.extend({ jobId: jobs[i]!.id, token: jobs[i]!.lease!.token }, new Date(now + 30_000)).then(() => batch.schedule(() => beat(i), 10_000));
    };
    // Three runs ask for their first heartbeat within an interval at 0 s, 3 s and 7 s.
    batch.schedule(() => beat(0), 10_000);
    clock.advance(3_000);
    batch.schedule(() => beat(1), 10_000);
    clock.advance(4_000);
    batch.schedule(() => beat(2), 10_000);
    for (let i = 0; i < 4; i++) {
      clock.advance(5_000);
      await new Promise((resolve) => setImmediate(resolve));
    }
    // Each beats at 10 s and 20 s (never later than its own interval), all three in one call each time.
    expect(beats).toEqual([
      [10_000, 20_000],
      [10_000, 20_000],
      [10_000, 20_000],
    ]);
    expect(batches).toEqual([3, 3]);
    for (const job of jobs) expect((await memory.getJob(job.id))?.lease?.until).toEqual(at(50_000));
  });

  it('rejects only the heartbeat of a lease no longer held (LEASE_LOST); the others are extended', async () => {
    const memory = new MemoryStore();
    const [a, b] = await claimed(memory, 2);
    await memory.complete({ jobId: b!.id, token: b!.lease!.token }, { now: at(1) });
    const clock = new FakeClock(at(0));
    const batch = new HeartbeatBatch({ store: memory, clock, intervalMs: 10_000 });
    const results: Promise<unknown>[] = [];
    for (const job of [a!, b!]) batch.schedule(() => results.push(batch.extend({ jobId: job.id, token: job.lease!.token }, at(40_000))), 10_000);
    clock.advance(10_000);
    const settled = await Promise.allSettled(results);
    expect(settled[0]).toEqual({ status: 'fulfilled', value: 'extended' });
    expect(LoomError.is((settled[1] as PromiseRejectedResult).reason, 'LEASE_LOST')).toBe(true);
  });

  it('a running engine: long jobs started at different times share one heartbeat per interval; a lost lease still aborts its run alone', async () => {
    signals.length = 0;
    gates.length = 0;
    const memory = new MemoryStore();
    const { store, batches, single } = countingStore(memory);
    const t = await createTestLoom({ jobs: [LongBeat], store, lease: '30s', concurrency: 10 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await t.enqueue(LongBeat)).id);
      await t.advance('2s');
    }
    await t.advance('2m');
    // Alone, five runs would make 5 x 12 = 60 heartbeats; on the shared beat they go 5 at a time.
    expect(single).toEqual([]);
    expect(batches.length).toBeLessThanOrEqual(13);
    expect(batches.slice(1).every((n) => n === 5)).toBe(true);
    expect(signals.every((s) => !s.aborted)).toBe(true);
    // Another worker takes one job over (its lease is cancelled under it): only that run is aborted.
    const first = await memory.getJob(ids[0]!);
    await memory.complete({ jobId: ids[0]!, token: first!.lease!.token }, { now: t.clock.now() });
    await t.advance('10s');
    expect(signals.map((s) => s.aborted)).toEqual([true, false, false, false, false]);
    expect(LoomError.is(signals[0]!.reason, 'LEASE_LOST')).toBe(true);
    for (const open of gates) open();
    await t.runUntilIdle();
    await t.stop();
  });
});
