import 'reflect-metadata';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Job, type JobContext } from '@loom/core';
import { testHooks } from '@loom/core/internal';
import { createTestLoom, type TestLoom } from '@loom/testing';
import { deferred, type Deferred } from './deferred.js';

// When the shutdown grace ends (or a job times out), the runner stops waiting for the handler and
// warns when the handler ignores ctx.signal: its worker slot stays taken until it returns. A
// handler that honours the abort but needs a few awaits to wind down must not be called deaf.

/** Cleanup steps a handler awaits after its signal aborted: each a promise, none new I/O. */
const cleanups: string[] = [];
async function cleanUp(step: string): Promise<void> {
  await Promise.resolve();
  cleanups.push(step);
  await new Promise<void>((resolve) => queueMicrotask(resolve));
}

@Job({ name: 'winds-down', retries: 0 })
class WindsDown {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    try {
      await new Promise<never>((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as unknown)));
    } finally {
      // Several nested awaits between the abort and the rejection reaching the engine.
      await cleanUp('flush');
      await cleanUp('close');
      await Promise.all([cleanUp('a'), cleanUp('b')]);
    }
  }
}

let gate: Deferred | undefined;
@Job({ name: 'deaf', retries: 0 })
class Deaf {
  async run(): Promise<void> {
    gate = deferred();
    await gate.promise;
  }
}

@Job({ name: 'deaf-with-timeout', timeout: '2s', retries: 0 })
class DeafWithTimeout {
  async run(): Promise<void> {
    gate = deferred();
    await gate.promise;
  }
}

@Job({ name: 'winds-down-at-timeout', timeout: '2s', retries: 0 })
class WindsDownAtTimeout extends WindsDown {}

const looms: TestLoom[] = [];
afterEach(async () => {
  gate?.resolve();
  gate = undefined;
  cleanups.length = 0;
  for (const t of looms.splice(0)) await t.stop();
});

async function running(job: typeof WindsDown | typeof Deaf | typeof DeafWithTimeout): Promise<{ t: TestLoom; id: string }> {
  const t = await createTestLoom({ jobs: [job], shutdownGrace: '1s' });
  looms.push(t);
  const { id } = await t.enqueue(job);
  await t.settle();
  expect(testHooks(t.loom).inFlight()).toMatchObject([{ jobId: id }]);
  return { t, id };
}

const ignoredWarnings = (t: TestLoom): string[] =>
  t.logs.filter((e) => e.level === 'warn' && String(e.msg).includes('ignores ctx.signal')).map((e) => String(e.msg));

describe('the warning about a handler that ignores ctx.signal', () => {
  it('is not logged for a handler that winds down through several awaits after the shutdown grace', async () => {
    const { t, id } = await running(WindsDown);
    await t.stop();
    expect(cleanups).toEqual(['flush', 'close', 'a', 'b']);
    expect(ignoredWarnings(t)).toEqual([]);
    expect(testHooks(t.loom).inFlight()).toEqual([]);
    // Released at the grace's end, as before: the attempt is given back.
    expect(await t.getJob(id)).toMatchObject({ status: 'queued', attempt: 0 });
  });

  it('is logged, naming the job, for a handler that ignores the signal past the shutdown grace', async () => {
    const { t, id } = await running(Deaf);
    await t.stop();
    expect(ignoredWarnings(t)).toEqual([
      `Job ${id}: the shutdown grace ended, but its handler ignores ctx.signal and is still running; its worker slot stays taken until it returns`,
    ]);
    expect(testHooks(t.loom).inFlight()).toMatchObject([{ jobId: id }]);
    expect(await t.getJob(id)).toMatchObject({ status: 'queued', attempt: 0 });
    gate!.resolve();
    await t.settle();
    expect(testHooks(t.loom).inFlight()).toEqual([]);
  });

  it('is not logged for a handler that winds down through several awaits at its timeout', async () => {
    const { t, id } = await running(WindsDownAtTimeout);
    await t.advance('2s');
    expect(cleanups).toEqual(['flush', 'close', 'a', 'b']);
    expect(ignoredWarnings(t)).toEqual([]);
    // Failed at the timeout, as before, with the timeout's error.
    expect(await t.getJob(id)).toMatchObject({ status: 'dead', errors: [{ code: 'JOB_TIMEOUT' }] });
  });

  it('is logged for a handler that ignores its timeout', async () => {
    const { t, id } = await running(DeafWithTimeout);
    await t.advance('2s');
    expect(ignoredWarnings(t)).toEqual([
      `Job ${id}: timed out after 2000 ms, but its handler ignores ctx.signal and is still running; its worker slot stays taken until it returns`,
    ]);
    expect((await t.getJob(id))?.status).toBe('dead');
  });
});
