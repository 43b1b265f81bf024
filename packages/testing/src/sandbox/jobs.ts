import 'reflect-metadata';
import { threadId } from 'node:worker_threads';
import { Job, type JobContext } from '@loom/core';

/** Which runner a handler ran in: its process and thread (a job with resourceLimits gets a process of its own). */
const runner = `${process.pid}/${threadId}`;

// The job classes of the sandbox scenarios (sandbox-scenarios.ts). A sandbox thread loads them
// compiled (dist/sandbox/container.js imports this module); the engine's side, the same classes
// from wherever the test runs them. Each handler reports `threadId` so a test can tell threads apart.

/** A child the sandboxed parent enqueues (runs on the engine's thread). */
@Job({ name: 'sbx-child', retries: 0 })
export class SbxChild {
  async run(payload: { n: number }): Promise<number> {
    return payload.n + 1;
  }
}

/** Every bridged ctx method a sandboxed run uses on its way to a result. */
async function echo(payload: { n: number }, ctx: JobContext): Promise<Record<string, unknown>> {
  const doubled = await ctx.step('double', () => payload.n * 2);
  const patched = await ctx.patched('v2');
  await ctx.progress({ doubled });
  ctx.log.info({ doubled }, 'sbx-echo: doubled in the thread');
  const child = await ctx.enqueue(SbxChild, { n: doubled });
  const childResult = await ctx.waitForJob<number>(child.id);
  const at = await ctx.step('at', () => new Date(Date.UTC(2026, 0, 2)));
  return { doubled, patched, childResult, attempt: ctx.attempt, threadId, pid: process.pid, at, signalAborted: ctx.signal.aborted };
}

@Job({ name: 'sbx-echo', sandbox: true, retries: 0 })
export class SbxEcho {
  run(payload: { n: number }, ctx: JobContext): Promise<Record<string, unknown>> {
    return echo(payload, ctx);
  }
}

/** The same in a process of its own (its job has resourceLimits). */
@Job({ name: 'sbx-echo-process', sandbox: { resourceLimits: { maxOldGenerationSizeMb: 64 } }, retries: 0 })
export class SbxEchoInProcess {
  run(payload: { n: number }, ctx: JobContext): Promise<Record<string, unknown>> {
    return echo(payload, ctx);
  }
}

/** A durable sleep inside a thread: the run parks, the job resumes after it. */
@Job({ name: 'sbx-sleeper', sandbox: true, retries: 0 })
export class SbxSleeper {
  async run(_: unknown, ctx: JobContext): Promise<string[]> {
    const a = await ctx.step('a', () => `a@${threadId}`);
    await ctx.sleep('nap', '1h');
    const b = await ctx.step('b', () => 'b');
    return [a.slice(0, 1), b];
  }
}

/** Throws on its first attempt, succeeds on the second. */
@Job({ name: 'sbx-thrower', sandbox: true, retries: 1, backoff: { type: 'fixed', delay: '1s' } })
export class SbxThrower {
  async run(_: unknown, ctx: JobContext): Promise<string> {
    if (ctx.attempt === 1) throw new Error('sbx-thrower: boom');
    return 'recovered';
  }
}

/** Ends its thread with process.exit on its first attempt. */
@Job({ name: 'sbx-exit', sandbox: true, retries: 1, backoff: { type: 'fixed', delay: '1s' } })
export class SbxExit {
  async run(_: unknown, ctx: JobContext): Promise<string> {
    if (ctx.attempt === 1) {
      await ctx.progress({ exiting: true, runner });
      process.exit(7);
    }
    return runner;
  }
}

/** Fills its 16 MB heap on its first attempt. */
@Job({
  name: 'sbx-oom',
  sandbox: { threads: 1, resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 } },
  retries: 1,
  backoff: { type: 'fixed', delay: '1s' },
})
export class SbxOom {
  async run(_: unknown, ctx: JobContext): Promise<string> {
    if (ctx.attempt === 1) {
      await ctx.progress({ filling: true, runner });
      const hoard: unknown[] = [];
      for (;;) hoard.push({ filler: new Array(1_000).fill(hoard.length) });
    }
    return runner;
  }
}

/** Never returns on its first attempt (a busy loop: its thread's event loop never turns again). */
@Job({ name: 'sbx-loop', sandbox: true, timeout: '5s', retries: 1, backoff: { type: 'fixed', delay: '1s' } })
export class SbxLoop {
  async run(_: unknown, ctx: JobContext): Promise<string> {
    if (ctx.attempt === 1) {
      await ctx.progress({ looping: true, runner });
      for (;;);
    }
    return runner;
  }
}

/** Answers at once. */
@Job({ name: 'sbx-quick', sandbox: true, retries: 0 })
export class SbxQuick {
  async run(payload: { n: number }): Promise<{ n: number; threadId: number }> {
    return { n: payload.n, threadId };
  }
}

/** Waits for ctx.signal, then reports why it aborted. */
@Job({ name: 'sbx-waiter', sandbox: true, retries: 0 })
export class SbxWaiter {
  async run(_: unknown, ctx: JobContext): Promise<string> {
    await ctx.progress({ waiting: true });
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
    const reason = ctx.signal.reason as { code?: string };
    ctx.log.info({ code: reason.code }, 'sbx-waiter: aborted');
    return String(reason.code);
  }
}

/** Returns something a structured clone refuses. */
@Job({ name: 'sbx-uncloneable', sandbox: true, retries: 0 })
export class SbxUncloneable {
  async run(): Promise<unknown> {
    return { ok: true, nested: { callback: () => 1 } };
  }
}

/** Asks for a transaction, which no sandbox can give. */
@Job({ name: 'sbx-transaction', sandbox: true, retries: 2 })
export class SbxTransaction {
  async run(_: unknown, ctx: JobContext): Promise<unknown> {
    return ctx.transaction(async () => 'never');
  }
}

/** Every class above, for `Loom.create({ jobs })`. */
export const SANDBOX_SCENARIO_JOBS = [
  SbxChild,
  SbxEcho,
  SbxEchoInProcess,
  SbxSleeper,
  SbxThrower,
  SbxExit,
  SbxOom,
  SbxLoop,
  SbxQuick,
  SbxWaiter,
  SbxUncloneable,
  SbxTransaction,
];
