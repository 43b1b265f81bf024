import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Job, Loom, LoomError, MemoryStore, type JobContext } from '@loom/core';
import { LoomModule } from '@loom/nestjs';
import { CaptureLogger, FakeClock } from '@loom/testing';
import { deferred, type Deferred } from './nest-harness.js';

/** What the job waits for: the test lets each run finish (or never does). */
@Injectable()
class Gate {
  release: Deferred = deferred();
  readonly started: Deferred<string> = deferred();
}

@Injectable()
@Job({ name: 'slow-export' })
class SlowExport {
  constructor(private readonly gate: Gate) {}
  async run(_payload: undefined, ctx: JobContext): Promise<string> {
    this.gate.started.resolve(ctx.jobId);
    await this.gate.release.promise; // ignores ctx.signal on purpose: a handler that will not stop
    return 'exported';
  }
}

@Module({ providers: [Gate, SlowExport] })
class ExportsModule {}

/** A FakeClock that tells when a timer of a given length is set (the engine's shutdown grace). */
class WatchedClock extends FakeClock {
  readonly timersSet: number[] = [];
  private watchers: Array<{ ms: number; resolve: () => void }> = [];

  override setTimer(fn: () => void, ms: number): () => void {
    this.timersSet.push(ms);
    for (const w of this.watchers.filter((x) => x.ms === ms)) w.resolve();
    return super.setTimer(fn, ms);
  }

  timerOf(ms: number): Promise<void> {
    if (this.timersSet.includes(ms)) return Promise.resolve();
    return new Promise((resolve) => this.watchers.push({ ms, resolve }));
  }
}

async function boot(options: { init?: boolean } = {}) {
  const clock = new WatchedClock();
  const store = new MemoryStore();
  const closed: string[] = [];
  const close = store.close.bind(store);
  store.close = async () => {
    closed.push('store closed');
    await close();
  };
  const moduleRef = await Test.createTestingModule({
    // No presence beats: their 5 s timer would pass for the 5 s grace that timerOf(5_000) waits for.
    imports: [LoomModule.forRoot({ store, clock, logger: new CaptureLogger(), shutdownGrace: '5s', presenceInterval: false }), ExportsModule],
  }).compile();
  const app = options.init === false ? moduleRef : await moduleRef.init();
  return { app, moduleRef, clock, store, closed, loom: app.get(Loom), gate: app.get(Gate) };
}

describe('LoomModule lifecycle', () => {
  it('starts the engine on application bootstrap, not before', async () => {
    const { moduleRef, loom, gate, store } = await boot({ init: false });
    const { id } = await loom.enqueue(SlowExport);
    expect((await store.getJob(id))?.status).toBe('queued');
    await moduleRef.init();
    expect(await gate.started.promise).toBe(id);
    gate.release.resolve();
    await moduleRef.close();
    expect((await store.getJob(id))?.status).toBe('completed');
  });

  it('on shutdown lets a run in flight finish within shutdownGrace, then stops the engine and closes the store', async () => {
    const { app, loom, gate, store, clock, closed } = await boot();
    const { id } = await loom.enqueue(SlowExport);
    await gate.started.promise;
    const closing = app.close();
    await clock.timerOf(5_000); // the engine is stopping: it has armed its grace
    expect(closed).toEqual([]);
    gate.release.resolve();
    await closing;
    expect(await store.getJob(id)).toMatchObject({ status: 'completed', result: 'exported' });
    expect(closed).toEqual(['store closed']);
    const restart = await loom.start().catch((err: unknown) => err);
    expect(LoomError.is(restart, 'ENGINE_STATE')).toBe(true);
  });

  it('on shutdown releases a run that outlives shutdownGrace back to the queue, unfinished', async () => {
    const { app, loom, gate, store, clock, closed } = await boot();
    const { id } = await loom.enqueue(SlowExport);
    await gate.started.promise;
    const closing = app.close();
    await clock.timerOf(5_000);
    clock.advance('5s');
    await closing;
    const job = await store.getJob(id);
    expect(job?.status).toBe('queued');
    expect(job?.result).toBeUndefined();
    expect(closed).toEqual(['store closed']);
  });
});
