/// <reference types="jest" />
import 'reflect-metadata';
import type { JobStore, LoomEventMap } from '@loom/core';
import { FakeClock } from './fake-clock.js';
import { createTestLoom, type TestLoom } from './test-loom.js';
import {
  SANDBOX_SCENARIO_JOBS,
  SbxEchoInProcess,
  SbxEcho,
  SbxExit,
  SbxLoop,
  SbxOom,
  SbxQuick,
  SbxSleeper,
  SbxThrower,
  SbxTransaction,
  SbxUncloneable,
  SbxWaiter,
} from './sandbox/jobs.js';

/**
 * The sandbox module of these scenarios, compiled: threads load JavaScript, so running from the
 * TypeScript sources (ts-jest) this is the package's `dist/` (build first).
 */
export function sandboxScenarioModule(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../dist/sandbox/container.js', here) : new URL('./sandbox/container.js', here);
}

/** The next `event` for which `match` holds. */
function next<E extends keyof LoomEventMap>(t: TestLoom, event: E, match: (e: LoomEventMap[E]) => boolean): Promise<LoomEventMap[E]> {
  return new Promise((resolve) => {
    const off = t.on(event, (e) => {
      if (!match(e)) return;
      off();
      resolve(e);
    });
  });
}

/** The progress a job reports next. */
function progressOf(t: TestLoom, jobId: string): Promise<Record<string, unknown>> {
  return next(t, 'job:progress', (e) => e.job.id === jobId).then((e) => e.progress as Record<string, unknown>);
}

/**
 * Sandboxed handlers (`@Job({ sandbox })`) in real worker threads, on any store: every `ctx`
 * method across the bridge, and each way a handler can fail (throw, `process.exit`, out of heap,
 * a loop that never returns, a value that does not clone, `ctx.transaction`) ending the attempt
 * while the engine keeps heartbeating and running other jobs. Threads run in real time: the tests
 * wait on the engine's events, and move the FakeClock only for the engine's own timers.
 */
export function describeSandboxScenarios(label: string, fixture: () => { store: JobStore } | Promise<{ store: JobStore }>): void {
  describe(`sandboxed handlers on ${label}`, () => {
    let t: TestLoom;
    let store: JobStore;

    beforeEach(async () => {
      ({ store } = await fixture());
      t = await createTestLoom({
        jobs: SANDBOX_SCENARIO_JOBS,
        store,
        clock: new FakeClock(),
        lease: '3s',
        pollInterval: '1h',
        sandbox: { module: sandboxScenarioModule(), threads: 2 },
        // A thread's start (loading the module) moves nothing the harness sees; on a loaded machine it takes seconds.
        realIoTimeout: '60s',
      });
    });

    afterEach(async () => {
      await t.stop();
      await store.close();
    });

    it('bridges ctx: step, patched, progress, log, enqueue and waitForJob; the result crosses as a clone', async () => {
      const { id } = await t.enqueue(SbxEcho, { n: 21 });
      await t.runUntilIdle();
      const job = await t.getJob(id);
      expect(job?.status).toBe('completed');
      const result = job?.result as Record<string, unknown>;
      expect(result).toMatchObject({ doubled: 42, patched: true, childResult: 43, attempt: 1, pid: process.pid, signalAborted: false });
      expect(result.threadId).not.toBe(0); // not the engine's (main) thread
      expect(result.at).toEqual(new Date(Date.UTC(2026, 0, 2)));
      expect(job?.progress).toEqual({ doubled: 42 });
      expect(job?.steps.find((s) => s.name === 'double')).toMatchObject({ status: 'completed', result: 42 });
      expect(t.logs.find((l) => l.msg === 'sbx-echo: doubled in the thread')?.fields).toMatchObject({ jobId: id, doubled: 42 });
      // ...and the job keeps it in its log tail (jobs.get).
      const kept = job?.logs?.find((l) => l.msg === 'sbx-echo: doubled in the thread');
      expect(kept).toMatchObject({ level: 'info', attempt: 1 });
      expect(kept?.fields).toEqual({ doubled: 42 });
    });

    it('runs a job with resourceLimits in a process of its own, ctx bridged the same way', async () => {
      const { id } = await t.enqueue(SbxEchoInProcess, { n: 21 });
      await t.runUntilIdle();
      const job = await t.getJob(id);
      expect(job?.status).toBe('completed');
      const result = job?.result as Record<string, unknown>;
      expect(result).toMatchObject({ doubled: 42, patched: true, childResult: 43, attempt: 1, threadId: 0, signalAborted: false });
      expect(result.pid).not.toBe(process.pid);
      expect(result.at).toEqual(new Date(Date.UTC(2026, 0, 2)));
      expect(job?.progress).toEqual({ doubled: 42 });
      expect(t.logs.find((l) => l.msg === 'sbx-echo: doubled in the thread')?.fields).toMatchObject({ jobId: id, doubled: 42 });
      // ...and the job keeps it in its log tail (jobs.get).
      const kept = job?.logs?.find((l) => l.msg === 'sbx-echo: doubled in the thread');
      expect(kept).toMatchObject({ level: 'info', attempt: 1 });
      expect(kept?.fields).toEqual({ doubled: 42 });
    });

    it('parks a run at ctx.sleep and resumes it after the sleep', async () => {
      const { id } = await t.enqueue(SbxSleeper, {});
      await t.runUntilIdle();
      expect((await t.getJob(id))?.status).not.toBe('completed');
      await t.advance('1h');
      await t.runUntilIdle();
      const job = await t.getJob(id);
      expect(job?.status).toBe('completed');
      expect(job?.result).toEqual(['a', 'b']);
    });

    it('a handler that throws fails its attempt, which retries as usual', async () => {
      const { id } = await t.enqueue(SbxThrower, {});
      await t.runUntilIdle();
      await t.advance('1s');
      await t.runUntilIdle();
      const job = await t.getJob(id);
      expect(job?.status).toBe('completed');
      expect(job?.result).toBe('recovered');
      expect(job?.errors[0]?.message).toContain('sbx-thrower: boom');
    });

    it('process.exit ends the thread, not the engine: SANDBOX_CRASHED, a new thread runs the retry', async () => {
      const { id } = await t.enqueue(SbxExit, {});
      const exiting = progressOf(t, id);
      const failed = next(t, 'job:failed', (e) => e.job.id === id);
      await t.settle();
      const { runner } = await exiting;
      expect((await failed).error).toMatchObject({ code: 'SANDBOX_CRASHED' });
      await t.advance('1s');
      await t.runUntilIdle();
      const job = await t.getJob(id);
      expect(job?.status).toBe('completed');
      expect(job?.result).not.toBe(runner);
      expect(job?.errors[0]).toMatchObject({ code: 'SANDBOX_CRASHED' });
      expect(job?.errors[0]?.message).toContain('exited with code 7');
    });

    it('a handler over its resourceLimits (heap) ends its process, not the engine: SANDBOX_CRASHED, then a retry', async () => {
      const { id } = await t.enqueue(SbxOom, {});
      const filling = progressOf(t, id);
      const failed = next(t, 'job:failed', (e) => e.job.id === id);
      await t.settle();
      const { runner } = await filling;
      const { error } = await failed;
      expect(error).toMatchObject({ code: 'SANDBOX_CRASHED' });
      expect(error.message).toContain('out of memory');
      await t.advance('1s');
      await t.runUntilIdle();
      const job = await t.getJob(id);
      expect(job?.status).toBe('completed');
      expect(job?.result).not.toBe(runner);
    });

    it('a handler that never returns times out; meanwhile the engine heartbeats and runs other jobs', async () => {
      const { id } = await t.enqueue(SbxLoop, {});
      const looping = progressOf(t, id);
      await t.settle();
      const { runner } = await looping;
      const leaseBefore = (await t.getJob(id))?.lease?.until.getTime() ?? 0;

      // Another sandboxed job (in the second thread) completes while the first one loops.
      const quick = await t.enqueue(SbxQuick, { n: 1 });
      const quickDone = next(t, 'job:completed', (e) => e.job.id === quick.id);
      await t.settle();
      expect((await quickDone).result).toMatchObject({ n: 1 });

      await t.advance('4s'); // heartbeats every second (lease 3s) keep the looping run's lease
      const during = await t.getJob(id);
      expect(during?.status).toBe('running');
      expect(during?.lease?.until.getTime()).toBeGreaterThanOrEqual(leaseBefore + 3_000);

      const failed = next(t, 'job:failed', (e) => e.job.id === id);
      await t.advance('1s'); // the timeout: the run fails and its thread is ended
      expect((await failed).error).toMatchObject({ code: 'JOB_TIMEOUT' });
      await t.advance('1s');
      await t.runUntilIdle();
      const job = await t.getJob(id);
      expect(job?.status).toBe('completed');
      expect(job?.result).not.toBe(runner);
    });

    it('a cancel aborts ctx.signal inside the thread, with the CancelledError as its reason', async () => {
      const { id } = await t.enqueue(SbxWaiter, {});
      const waiting = progressOf(t, id);
      await t.settle();
      await waiting;
      const cancelled = next(t, 'job:cancelled', (e) => e.job.id === id);
      await t.jobs.cancel(id);
      await cancelled;
      expect((await t.getJob(id))?.status).toBe('cancelled');
      expect(t.logs.find((l) => l.msg === 'sbx-waiter: aborted')?.fields).toMatchObject({ code: 'CANCELLED' });
    });

    it('a lost lease aborts ctx.signal inside the thread with LEASE_LOST, and its result changes nothing', async () => {
      const { id } = await t.enqueue(SbxWaiter, {});
      const waiting = progressOf(t, id);
      await t.settle();
      await waiting;
      // Another worker takes the job over and finishes it: this engine's next heartbeat learns it.
      const running = await t.getJob(id);
      await store.complete({ jobId: id, token: running!.lease!.token }, { result: 'the other worker', now: t.clock.now() });
      await t.advance('2s');
      await t.runUntilIdle();
      expect(t.logs.find((l) => l.msg === 'sbx-waiter: aborted')?.fields).toMatchObject({ jobId: id, code: 'LEASE_LOST' });
      const job = await t.getJob(id);
      expect(job?.status).toBe('completed');
      expect(job?.result).toBe('the other worker');
    });

    it('at shutdown a run that outlives the grace is released and its thread ended; stop() returns', async () => {
      const { id } = await t.enqueue(SbxLoop, {});
      const looping = progressOf(t, id);
      await t.settle();
      await looping;
      await t.stop({ grace: '1s' });
      const job = await t.getJob(id);
      expect(job?.status).toBe('queued');
      expect(job?.errors).toEqual([]);
    });

    it('a result that does not clone fails with NOT_CLONEABLE naming the field', async () => {
      const { id } = await t.enqueue(SbxUncloneable, {});
      await t.runUntilIdle();
      const job = await t.getJob(id);
      expect(job?.status).toBe('dead');
      expect(job?.errors[0]).toMatchObject({ code: 'NOT_CLONEABLE' });
      expect(job?.errors[0]?.message).toContain('nested.callback');
    });

    it('ctx.transaction is refused with SANDBOX_UNSUPPORTED, and not retried', async () => {
      const { id } = await t.enqueue(SbxTransaction, {});
      await t.runUntilIdle();
      const job = await t.getJob(id);
      expect(job?.status).toBe('dead');
      expect(job?.attempt).toBe(1);
      expect(job?.errors[0]).toMatchObject({ code: 'SANDBOX_UNSUPPORTED' });
    });
  });
}
