import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { describe, expect, it } from '@jest/globals';
import { Job, LOOM_VERSION, MAX_PRESENCE_JOB_IDS, MemoryStore, PRESENCE_MISSED_BEATS, type JobContext, type JobStore } from '@loom/core';
import { createTestLoom, FakeClock } from '@loom/testing';
import { deferred } from './deferred.js';

// Issue 34, item 4: engines record their presence (host, pid, version, queues, concurrency, what
// they run, last seen) every beat, delete it on a clean stop, and count as gone after missed beats.

let gate = deferred();
@Job({ name: 'presence-slow', queue: 'slow' })
class SlowJob {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    await Promise.race([gate.promise, new Promise((resolve) => ctx.signal.addEventListener('abort', resolve))]);
  }
}

@Job({ name: 'presence-fast', queue: 'fast' })
class FastJob {
  async run(): Promise<void> {}
}

/** A MemoryStore whose presence writes fail while `failing.on`. */
function flakyPresenceStore(failing: { on: boolean }): JobStore {
  const store = new MemoryStore();
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'recordPresence' && failing.on) return async () => Promise.reject(new Error('presence write refused'));
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe('engine presence (loom.workers)', () => {
  it('records host, pid, versions, queues, concurrency and running jobs at start and every beat', async () => {
    gate = deferred();
    const clock = new FakeClock();
    const started = clock.now();
    const t = await createTestLoom({ jobs: [SlowJob, FastJob], clock, owner: 'engine-a', concurrency: 4, presenceInterval: '5s' });
    await t.settle();
    const [first, ...others] = await t.workers.list();
    expect(others).toEqual([]);
    expect(first).toEqual({
      id: 'engine-a',
      host: hostname(),
      pid: process.pid,
      version: LOOM_VERSION,
      node: process.version,
      queues: expect.arrayContaining(['slow', 'fast']),
      concurrency: 4,
      running: 0,
      runningJobIds: [],
      state: 'running',
      startedAt: started,
      lastSeenAt: started,
      expiresAt: new Date(started.getTime() + PRESENCE_MISSED_BEATS * 5_000),
    });

    const { id } = await t.enqueue(SlowJob, undefined);
    await t.settle();
    // The row changes at the next beat, not before.
    expect((await t.workers.list())[0]?.running).toBe(0);
    await t.advance('5s');
    const beat = (await t.workers.list())[0];
    expect(beat).toMatchObject({ running: 1, runningJobIds: [id], lastSeenAt: new Date(started.getTime() + 5_000), startedAt: started });
    expect(beat?.expiresAt).toEqual(new Date(started.getTime() + 5_000 + PRESENCE_MISSED_BEATS * 5_000));
    gate.resolve();
    await t.runUntilIdle();
    await t.stop();
  });

  it('deletes its row on a clean stop, and says stopping while its runs finish', async () => {
    gate = deferred();
    const clock = new FakeClock();
    const store = new MemoryStore();
    const t = await createTestLoom({ jobs: [SlowJob], clock, store, owner: 'engine-b', presenceInterval: '5s', shutdownGrace: '20s' });
    await t.enqueue(SlowJob, undefined);
    await t.settle();
    const stopping = t.stop();
    await t.settle();
    expect(await store.listPresence(clock.now())).toMatchObject([{ id: 'engine-b', state: 'stopping', running: 1 }]);
    gate.resolve();
    await stopping;
    expect(await store.listPresence(clock.now())).toEqual([]);
    // Nothing re-records it after the stop.
    clock.advance('1m');
    expect(await store.listPresence(new Date(clock.now().getTime() - 60_000))).toEqual([]);
  });

  it(`counts an engine as gone after ${PRESENCE_MISSED_BEATS} missed beats, and lists it again when its beats come back`, async () => {
    const clock = new FakeClock();
    const failing = { on: false };
    const store = flakyPresenceStore(failing);
    const t = await createTestLoom({ jobs: [FastJob], clock, store, owner: 'engine-c', presenceInterval: '5s' });
    const other = await createTestLoom({ jobs: [FastJob], clock, store, owner: 'engine-d', presenceInterval: '5s' });
    await t.settle();
    expect((await t.workers.list()).map((w) => w.id)).toEqual(['engine-c', 'engine-d']);

    failing.on = true; // no beat of either engine reaches the store from now on
    await t.advance('14.999s'); // two beats missed, the third is due at 15 s
    expect((await t.workers.list()).map((w) => w.id)).toEqual(['engine-c', 'engine-d']);
    await t.advance('1ms');
    expect(await t.workers.list()).toEqual([]);
    // Logged (a MemoryStore calls every failure transient: the outage line), never fatal: the engine still runs jobs.
    expect(t.logs.some((e) => e.level === 'warn' && String(e.msg).includes('recordPresence: presence write refused'))).toBe(true);
    const { id } = await t.enqueue(FastJob, undefined);
    await t.runUntilIdle();
    expect((await t.getJob(id))?.status).toBe('completed');

    failing.on = false;
    await t.advance('5s');
    expect((await t.workers.list()).map((w) => w.id)).toEqual(['engine-c', 'engine-d']);
    await other.stop();
    expect((await t.workers.list()).map((w) => w.id)).toEqual(['engine-c']);
    await t.stop();
  });

  it('logs a presence write the store refuses for good as a warning of its own, and goes on running jobs', async () => {
    const clock = new FakeClock();
    const failing = { on: true };
    const store = Object.assign(Object.create(flakyPresenceStore(failing)) as JobStore, { isTransientError: () => false });
    const t = await createTestLoom({ jobs: [FastJob], clock, store, presenceInterval: '5s' });
    await t.advance('5s');
    const warnings = t.logs.filter((e) => e.level === 'warn').map((e) => e.msg);
    expect(warnings).toEqual([
      "Recording this engine's presence failed (recordPresence: presence write refused); the next beat tries again",
      "Recording this engine's presence failed (recordPresence: presence write refused); the next beat tries again",
    ]);
    const { id } = await t.enqueue(FastJob, undefined);
    await t.runUntilIdle();
    expect((await t.getJob(id))?.status).toBe('completed');
    await t.stop();
  });

  it('stops cleanly, and goes on beating, when the store hangs on presence writes', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore();
    const hanging = { on: false };
    const calls: string[] = [];
    const wrapped = new Proxy(store, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== 'function') return value;
        if ((prop === 'recordPresence' || prop === 'removePresence') && hanging.on) {
          return () => {
            calls.push(prop);
            return new Promise(() => {});
          };
        }
        return (value as (...a: unknown[]) => unknown).bind(target);
      },
    });
    const t = await createTestLoom({ jobs: [FastJob], clock, store: wrapped, presenceInterval: '5s', hungStoreCall: '50ms' });
    await t.settle();
    hanging.on = true;
    await t.advance('20s');
    // One write per beat: each hung one was given up after half an interval, so the next one was made.
    expect(calls.filter((c) => c === 'recordPresence').length).toBeGreaterThanOrEqual(4);
    await t.stop();
    expect(calls).toContain('removePresence');
    expect(t.logs.some((e) => String(e.msg).includes('removePresence'))).toBe(true);
  });

  it('lists at most MAX_PRESENCE_JOB_IDS running job ids, and counts them all', async () => {
    gate = deferred();
    const clock = new FakeClock();
    const t = await createTestLoom({ jobs: [SlowJob], clock, concurrency: MAX_PRESENCE_JOB_IDS + 5, presenceInterval: '5s' });
    await t.enqueueMany(
      SlowJob,
      Array.from({ length: MAX_PRESENCE_JOB_IDS + 5 }, () => undefined),
    );
    await t.advance('5s');
    const [row] = await t.workers.list();
    expect(row?.running).toBe(MAX_PRESENCE_JOB_IDS + 5);
    expect(row?.runningJobIds).toHaveLength(MAX_PRESENCE_JOB_IDS);
    gate.resolve();
    await t.runUntilIdle();
    await t.stop();
  });

  it('records nothing before start, nor with presenceInterval: false', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore();
    const idle = await createTestLoom({ jobs: [FastJob], clock, store, start: false, presenceInterval: '5s' });
    const off = await createTestLoom({ jobs: [FastJob], clock, store, presenceInterval: false });
    await off.advance('10s');
    expect(await store.listPresence(clock.now())).toEqual([]);
    await idle.stop();
    await off.stop();
  });

  it('reports the version of its package.json', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(LOOM_VERSION).toBe(pkg.version);
  });
});
