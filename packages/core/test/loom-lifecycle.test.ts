import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, Loom, MemoryStore, type JobContext } from '@loom/core';
import { CaptureLogger, createTestLoom, FakeClock } from '@loom/testing';
import { faultyStore } from './faulty-store.js';

@Job({ name: 'noop' })
class Noop {
  async run(): Promise<void> {}
}

class Receipt {
  constructor(readonly id: string) {}
}

@Job({ name: 'returns-class' })
class ReturnsClass {
  async run(): Promise<Receipt> {
    return new Receipt('r1');
  }
}

const delaysSeen: Array<[number, string]> = [];
@Job({
  name: 'custom-backoff',
  retries: 2,
  backoff: (attempt, error) => {
    delaysSeen.push([attempt, error.message]);
    return `${attempt * 10}s`;
  },
})
class CustomBackoff {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    throw new Error(`failure ${ctx.attempt}`);
  }
}

@Job({ name: 'broken-backoff', retries: 1, backoff: () => 'whenever' })
class BrokenBackoff {
  async run(): Promise<void> {
    throw new Error('nope');
  }
}

let gate: (() => void) | undefined;
@Job({ name: 'long', retries: 0 })
class Long {
  async run(_: undefined, ctx: JobContext): Promise<string> {
    await new Promise<void>((resolve) => {
      gate = resolve;
      ctx.signal.addEventListener('abort', () => resolve());
    });
    return ctx.signal.aborted ? 'aborted' : 'finished';
  }
}

const logger = new CaptureLogger();

describe('Loom options and lifecycle', () => {
  it.each([
    [{ concurrency: 0 }, /Loom option "concurrency": 0 is not an integer >= 1/],
    [{ lease: 'long' }, /Loom option "lease"/],
    [{ shutdownGrace: -1 }, /Loom option "shutdownGrace"/],
    [{ queues: [''] }, /Loom option "queues"/],
    [{ store: {} }, /Loom option "store": must be a JobStore/],
  ])('refuses %j with a message naming the option', async (bad, message) => {
    await expect(Loom.create({ store: new MemoryStore(), jobs: [Noop], logger, ...(bad as object) })).rejects.toThrow(message);
  });

  it('cannot start again after stop', async () => {
    const loom = await Loom.create({ store: new MemoryStore(), jobs: [Noop], clock: new FakeClock(), logger });
    await loom.start();
    await loom.start();
    await loom.stop();
    await expect(loom.start()).rejects.toThrow(/was stopped and cannot start again/);
  });

  it('keeps the process alive while started with the system clock, and not with a fake one', async () => {
    const realSetInterval = globalThis.setInterval;
    const realClearInterval = globalThis.clearInterval;
    const held: number[] = [];
    const handles = new Set<unknown>();
    globalThis.setInterval = ((fn: () => void, ms: number) => {
      held.push(ms);
      const handle = realSetInterval(fn, ms);
      handles.add(handle);
      return handle;
    }) as typeof setInterval;
    globalThis.clearInterval = ((handle: Parameters<typeof clearInterval>[0]) => {
      handles.delete(handle);
      realClearInterval(handle);
    }) as typeof clearInterval;
    try {
      const real = await Loom.create({ store: new MemoryStore(), jobs: [Noop], logger });
      await real.start();
      expect(held).toEqual([2 ** 31 - 1]);
      expect(handles.size).toBe(1);
      await real.stop();
      expect(handles.size).toBe(0);
      const fake = await Loom.create({ store: new MemoryStore(), jobs: [Noop], logger, clock: new FakeClock() });
      await fake.start();
      await fake.stop();
      expect(held).toEqual([2 ** 31 - 1]);
    } finally {
      globalThis.setInterval = realSetInterval;
      globalThis.clearInterval = realClearInterval;
    }
  });

  it('completes a job whose return value is not plain data, without storing it, and says so', async () => {
    const t = await createTestLoom({ jobs: [ReturnsClass] });
    const { id } = await t.enqueue(ReturnsClass);
    await t.runUntilIdle();
    const job = await t.getJob(id);
    expect(job?.status).toBe('completed');
    expect(job?.result).toBeUndefined();
    expect(t.logs.some((e) => e.level === 'warn' && /return value is not plain data at \(root\)/.test(e.msg))).toBe(true);
    await t.stop();
  });

  it('uses a custom backoff function with the attempt and the error', async () => {
    delaysSeen.length = 0;
    const t = await createTestLoom({ jobs: [CustomBackoff] });
    const retries: number[] = [];
    t.loom.on('job:retrying', (e) => retries.push(e.delayMs));
    const { id } = await t.enqueue(CustomBackoff);
    await t.advance('30s');
    expect(delaysSeen).toEqual([
      [1, 'failure 1'],
      [2, 'failure 2'],
    ]);
    expect(retries).toEqual([10_000, 20_000]);
    expect((await t.getJob(id))?.status).toBe('dead');
    await t.stop();
  });

  it('falls back to the default backoff when the custom one fails, and logs it', async () => {
    const t = await createTestLoom({ jobs: [BrokenBackoff], random: () => 0.5 });
    const retries: number[] = [];
    t.loom.on('job:retrying', (e) => retries.push(e.delayMs));
    await t.enqueue(BrokenBackoff);
    await t.runUntilIdle();
    expect(retries).toEqual([500]);
    expect(t.logs.some((e) => e.level === 'error' && /backoff function failed; used the default backoff/.test(e.msg))).toBe(true);
    await t.stop();
  });

  it('keeps the run going when one heartbeat fails but the next succeeds', async () => {
    const faulty = faultyStore(new MemoryStore(), { heartbeatMany: 1 });
    const t = await createTestLoom({ jobs: [Long], store: faulty.store, lease: '30s' });
    const errors: string[] = [];
    t.loom.on('worker:error', (e) => errors.push(e.operation));
    const { id } = await t.enqueue(Long);
    await t.advance('2m');
    expect(faulty.caused.heartbeatMany).toBe(1);
    expect(errors).toEqual(['extendLease']);
    expect((await t.getJob(id))?.status).toBe('running');
    gate?.();
    await t.runUntilIdle();
    expect(await t.getJob(id)).toMatchObject({ status: 'completed', result: 'finished', attempt: 1 });
    await t.stop();
  });
});
