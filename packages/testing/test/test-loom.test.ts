import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, type JobContext } from '@loom/core';
import { CaptureLogger, createTestLoom, FakeClock } from '@loom/testing';

const log: string[] = [];

@Job({ name: 'chain', retries: 0 })
class Chain {
  async run(p: { left: number }, ctx: JobContext): Promise<void> {
    log.push(`chain ${p.left}`);
    // A follow-up enqueued by a run (not through ctx: it goes through the engine's public API).
    if (p.left > 0) await loomRef!.enqueue(Chain, { left: p.left - 1 });
    void ctx;
  }
}
let loomRef: { enqueue: (job: typeof Chain, p: { left: number }) => Promise<unknown> } | undefined;

let release: (() => void) | undefined;
@Job({ name: 'waits-on-test' })
class WaitsOnTest {
  async run(): Promise<void> {
    await new Promise<void>((resolve) => (release = resolve));
  }
}

@Job({ name: 'every-step', retries: 4, backoff: { type: 'exponential', delay: '1m' } })
class EveryStep {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    log.push(`attempt ${ctx.attempt}`);
    throw new Error('again');
  }
}

describe('createTestLoom', () => {
  it('uses a MemoryStore, a FakeClock and a quiet CaptureLogger by default', async () => {
    const t = await createTestLoom({ jobs: [Chain] });
    expect(t.clock).toBeInstanceOf(FakeClock);
    expect(t.logger).toBeInstanceOf(CaptureLogger);
    expect(t.clock.now().toISOString()).toBe('2026-01-01T00:00:00.000Z');
    await t.stop();
  });

  it('runUntilIdle runs follow-ups that runs cause, without moving time', async () => {
    log.length = 0;
    const t = await createTestLoom({ jobs: [Chain] });
    loomRef = t;
    const before = t.clock.now().getTime();
    await t.enqueue(Chain, { left: 3 });
    await t.runUntilIdle();
    expect(log).toEqual(['chain 3', 'chain 2', 'chain 1', 'chain 0']);
    expect(t.clock.now().getTime()).toBe(before);
    await t.stop();
  });

  it('runUntilIdle says which run is stuck instead of hanging', async () => {
    const t = await createTestLoom({ jobs: [WaitsOnTest] });
    const { id } = await t.enqueue(WaitsOnTest);
    await expect(t.runUntilIdle()).rejects.toThrow(new RegExp(`waits-on-test \\(${id}, attempt 1\\).*use t.advance`));
    release?.();
    await t.runUntilIdle();
    expect((await t.getJob(id))?.status).toBe('completed');
    await t.stop();
  });

  it('advance runs each retry at its own due time', async () => {
    const t = await createTestLoom({ jobs: [EveryStep] });
    const times: number[] = [];
    const start = t.clock.now().getTime();
    t.loom.on('job:started', () => times.push((t.clock.now().getTime() - start) / 60_000));
    const { id } = await t.enqueue(EveryStep);
    await t.advance('1h');
    // Backoff 1, 2, 4, 8 minutes: attempts at 0, 1, 3, 7, 15 minutes.
    expect(times).toEqual([0, 1, 3, 7, 15]);
    expect((await t.getJob(id))?.status).toBe('dead');
    expect(t.clock.now().getTime() - start).toBe(3_600_000);
    await t.stop();
  });

  it('stop moves time through the grace when a run hangs', async () => {
    const t = await createTestLoom({ jobs: [WaitsOnTest] });
    const { id } = await t.enqueue(WaitsOnTest);
    await t.settle();
    await t.stop({ grace: '3s' });
    expect((await t.getJob(id))?.status).toBe('queued');
    release?.();
  });
});
