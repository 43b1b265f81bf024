import 'reflect-metadata';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Job, Loom, MemoryStore, type JobStore } from '@loom/core';
import { CaptureLogger, FakeClock } from '@loom/testing';
import { deferred, type Deferred } from './deferred.js';

// Store operations per job of a running engine (not the test harness, which claims on every
// settle). Every claim that must come back empty is a database command on MongoDB: one job at a
// time costs enqueue, claim and complete, and nothing else.

@Job({ name: 'noop' })
class Noop {
  async run(): Promise<void> {}
}

const gates: Deferred[] = [];
const started: string[] = [];
@Job({ name: 'one-at-a-time', concurrency: 1 })
class OneAtATime {
  async run(p: { n: number }): Promise<void> {
    started.push(`one-${p.n}`);
    const gate = deferred();
    gates.push(gate);
    await gate.promise;
  }
}

@Job({ name: 'other' })
class Other {
  async run(): Promise<void> {
    started.push('other');
  }
}

/** Records the name of every store operation the engine calls. */
function recordingStore(store: JobStore): { store: JobStore; ops: string[] } {
  const ops: string[] = [];
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      return (...args: unknown[]) => {
        ops.push(prop);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: wrapped, ops };
}

/** Lets every promise chain and microtask announcement run (no time passes on the FakeClock). */
async function quiesce(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

const looms: Loom[] = [];
afterEach(async () => {
  gates.splice(0).forEach((g) => g.resolve());
  started.length = 0;
  await Promise.all(looms.splice(0).map((l) => l.stop()));
});

async function engine(jobs: Parameters<typeof Loom.create>[0]['jobs'], concurrency = 50): Promise<{ loom: Loom; ops: string[]; memory: MemoryStore }> {
  const memory = new MemoryStore();
  const { store, ops } = recordingStore(memory);
  const loom = await Loom.create({ store, jobs, clock: new FakeClock(), logger: new CaptureLogger(), concurrency });
  looms.push(loom);
  return { loom, ops, memory };
}

function completions(loom: Loom, n: number): Promise<void> {
  let left = n;
  const done = deferred();
  loom.on('job:completed', () => {
    if (--left === 0) done.resolve();
  });
  return done.promise;
}

describe('store operations per job of a running engine', () => {
  it("one job at a time: enqueue, claim, complete — no claim on the store's echo of the enqueue, none after the run", async () => {
    const { loom, ops } = await engine([Noop]);
    await loom.start();
    await quiesce();
    ops.length = 0;
    for (let i = 0; i < 5; i++) {
      const completed = completions(loom, 1);
      await loom.enqueue(Noop, undefined);
      await completed;
      await quiesce();
    }
    expect(ops).toEqual(Array.from({ length: 5 }, () => ['enqueue', 'claim', 'completeMany']).flat());
  });

  it('claims a job another process enqueued when the store announces it, once', async () => {
    const { loom, ops, memory } = await engine([Noop]);
    await loom.start();
    await quiesce();
    ops.length = 0;
    const completed = completions(loom, 1);
    await memory.enqueue([{ name: 'noop', queue: 'default', payload: undefined, priority: 0, runAt: new Date(0), maxAttempts: 3 }], { now: new Date(0) });
    await completed;
    await quiesce();
    expect(ops).toEqual(['claim', 'completeMany']);
  });

  it('claims a job its own concurrency held back when a run of that job ends, without waiting for a poll', async () => {
    const { loom, memory } = await engine([OneAtATime, Other], 5);
    // Already stored when the engine starts: nothing announces them, the first claims find them.
    const job = (name: string, payload: unknown) => ({ name, queue: 'default', payload, priority: 0, runAt: new Date(0), maxAttempts: 3 });
    await memory.enqueue([job('one-at-a-time', { n: 1 }), job('one-at-a-time', { n: 2 }), job('other', undefined)], { now: new Date(0) });
    const completed = completions(loom, 3);
    await loom.start();
    await quiesce();
    expect(started).toEqual(['one-1', 'other']);
    gates.shift()!.resolve();
    await quiesce();
    // The claim that found 'other' came back short, but it had left 'one-at-a-time' out.
    expect(started).toEqual(['one-1', 'other', 'one-2']);
    gates.shift()!.resolve();
    await completed;
  });

  it('works a backlog in claims as large as its room: the runs of one claim complete together, and the next claim asks for all their slots', async () => {
    const memory = new MemoryStore();
    const sizes: string[] = [];
    const store = new Proxy(memory, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (prop === 'claim') return (req: { limit: number }) => (sizes.push(`claim ${req.limit}`), memory.claim(req as never));
        if (prop === 'completeMany') return (items: unknown[], now: Date) => (sizes.push(`complete ${items.length}`), memory.completeMany(items as never, now));
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const loom = await Loom.create({ store, jobs: [Noop], clock: new FakeClock(), logger: new CaptureLogger(), concurrency: 10 });
    looms.push(loom);
    await memory.enqueue(
      Array.from({ length: 30 }, () => ({ name: 'noop', queue: 'default', payload: undefined, priority: 0, runAt: new Date(0), maxAttempts: 3 })),
      { now: new Date(0) },
    );
    const completed = completions(loom, 30);
    await loom.start();
    await completed;
    await quiesce();
    // Ending the first run of a claim alone would split every claim that follows: complete 1, claim 1, complete 9, claim 9...
    expect(sizes.slice(0, 6)).toEqual(['claim 10', 'complete 10', 'claim 10', 'complete 10', 'claim 10', 'complete 10']);
  });

  it('keeps claiming after a full claim while a backlog is left', async () => {
    const { loom, memory } = await engine([Noop], 2);
    await loom.start();
    await quiesce();
    const completed = completions(loom, 7);
    await loom.enqueueMany(
      Noop,
      Array.from({ length: 7 }, () => undefined),
    );
    await completed;
    expect(await memory.listJobs({ status: ['queued', 'running'] })).toEqual([]);
  });
});
