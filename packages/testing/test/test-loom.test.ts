import 'reflect-metadata';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from '@jest/globals';
import { Job, Loom, type JobContext } from '@loom/core';
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

let url = '';
@Job({ name: 'calls-http', retries: 0 })
class CallsHttp {
  async run(): Promise<string> {
    const response = await fetch(url);
    return response.text();
  }
}

/** A local HTTP server that answers only once `answer()` is called: real I/O the test paces. */
async function slowServer(): Promise<{ server: Server; answer: () => void; requests: () => number }> {
  const waiting: (() => void)[] = [];
  let requests = 0;
  let answered = false;
  const server = createServer((_req, res) => {
    requests++;
    const reply = (): void => void res.end('pong');
    if (answered) reply();
    else waiting.push(reply);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return {
    server,
    requests: () => requests,
    answer: () => {
      answered = true;
      for (const reply of waiting.splice(0)) reply();
    },
  };
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

  it('runUntilIdle says which run is stuck, and that it waits on engine time or the test, instead of hanging', async () => {
    const t = await createTestLoom({ jobs: [WaitsOnTest], realIoTimeout: '100ms' });
    const { id } = await t.enqueue(WaitsOnTest);
    await expect(t.runUntilIdle()).rejects.toThrow(new RegExp(`waits-on-test \\(${id}, attempt 1\\).*do not wait on real I/O.*t\\.advance`));
    release?.();
    await t.runUntilIdle();
    expect((await t.getJob(id))?.status).toBe('completed');
    await t.stop();
  });

  it('runUntilIdle waits for a run that awaits real I/O outside the store, without moving time', async () => {
    const http = await slowServer();
    try {
      const t = await createTestLoom({ jobs: [CallsHttp] });
      const before = t.clock.now().getTime();
      const { id } = await t.enqueue(CallsHttp);
      const idle = t.runUntilIdle();
      let done = false;
      void idle.then(
        () => (done = true),
        () => (done = true),
      );
      // The request is out and unanswered: the run is in flight and runUntilIdle keeps waiting.
      while (http.requests() === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      await t.settle();
      expect(done).toBe(false);
      http.answer();
      await idle;
      expect(await t.getJob(id)).toMatchObject({ status: 'completed', result: 'pong' });
      expect(t.clock.now().getTime()).toBe(before);
      await t.stop();
    } finally {
      http.server.close();
    }
  });

  it('exposes the whole Loom facade: every public member of the engine is on the harness', async () => {
    const t = await createTestLoom({ jobs: [Chain], start: false });
    const members = new Set([...Object.getOwnPropertyNames(Loom.prototype), ...Object.keys(t.loom)]);
    for (const name of ['constructor', 'testHooks']) members.delete(name);
    expect([...members].filter((name) => !(name in t))).toEqual([]);
    // Forwarded members act on the engine: the harness and t.loom are one engine.
    await t.start();
    loomRef = t;
    const { id } = await t.enqueue(Chain, { left: 0 });
    const completed: string[] = [];
    const off = t.on('job:completed', ({ job }) => completed.push(job.id));
    await t.runUntilIdle();
    off();
    expect(completed).toEqual([id]);
    expect(await t.deadLetters.list()).toEqual([]);
    expect(await t.schedules.list()).toEqual([]);
    expect(await t.signal(id, 'too-late')).toBe(false);
    expect(await t.stats()).toMatchObject({ inFlight: 0 });
    expect(t.deadLetters).toBe(t.loom.deadLetters);
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
