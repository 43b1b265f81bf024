import { Container } from 'inversify';
import { Loom, MemoryStore, type JobClass } from '@loom/core';
import { Countdown } from '../countdown.js';
import { benchLogger } from '../loom-jobs.js';
import { BurnInThread, BurnSandboxed, NoopInThread, NoopSandboxed } from '../sandbox-jobs.js';
import type { ScenarioResult, ScenarioSpec } from '../scenario.js';

type SandboxSpec = Extract<ScenarioSpec, { kind: 'sandbox' }>;

const SANDBOX_MODULE = new URL('../sandbox-container.js', import.meta.url);

/**
 * Issue 32: what a sandbox buys and costs, on MemoryStore (no database in the way).
 * - The engine's event-loop delay (p99, max) while two handlers burn a core for `burnMs` each: in
 *   sandbox threads, then on the engine's thread (for contrast: it blocks the loop the whole time).
 * - Wall time per no-op job, `noopJobs` of them, sandboxed (2 threads) vs in-thread, same concurrency.
 */
export async function sandboxCost(spec: SandboxSpec): Promise<ScenarioResult> {
  const loom = await Loom.create({
    container: new Container(),
    store: new MemoryStore(),
    jobs: [BurnSandboxed, BurnInThread, NoopSandboxed, NoopInThread],
    concurrency: 4,
    logger: benchLogger,
    sandbox: { module: SANDBOX_MODULE, threads: 2 },
  });
  await loom.start();
  try {
    // Both threads started and warm before anything is measured.
    await runAll(loom, NoopSandboxed, 4, spec.timeoutMs);
    const sandboxed = await loopDelayWhile(loom, BurnSandboxed, spec);
    const inThread = await loopDelayWhile(loom, BurnInThread, spec);
    const noopSandboxed = await runAll(loom, NoopSandboxed, spec.noopJobs, spec.timeoutMs);
    const noopInThread = await runAll(loom, NoopInThread, spec.noopJobs, spec.timeoutMs);
    return {
      metrics: {
        sandboxLoopDelayP99Ms: sandboxed.p99Ms,
        sandboxLoopDelayMaxMs: sandboxed.maxMs,
        sandboxBurnWallMs: sandboxed.wallMs,
        inThreadLoopDelayP99Ms: inThread.p99Ms,
        inThreadLoopDelayMaxMs: inThread.maxMs,
        inThreadBurnWallMs: inThread.wallMs,
        sandboxNoopUsPerJob: noopSandboxed,
        inThreadNoopUsPerJob: noopInThread,
        sandboxNoopOverheadUsPerJob: noopSandboxed - noopInThread,
      },
      notes: [`two handlers of ${spec.burnMs} ms each; ${spec.noopJobs} no-op jobs per mode; 2 sandbox threads, concurrency 4`],
    };
  } finally {
    await loom.stop();
  }
}

/** The engine's event-loop delay while two `job` handlers burn `burnMs` each. */
async function loopDelayWhile(loom: Loom, job: JobClass<{ ms: number }>, spec: SandboxSpec): Promise<{ p99Ms: number; maxMs: number; wallMs: number }> {
  const sampler = new LoopSampler();
  const done = new Countdown(2, `${job.name} completions`);
  const off = loom.on('job:completed', () => done.tick());
  const t0 = performance.now();
  await loom.enqueueMany(job, [{ ms: spec.burnMs }, { ms: spec.burnMs }]);
  await done.wait(spec.timeoutMs);
  const wallMs = performance.now() - t0;
  // A blocked loop shows as the gap before the sampler's next tick: let it tick once more.
  await new Promise((resolve) => setTimeout(resolve, 5));
  const delays = sampler.stop();
  off();
  return { p99Ms: percentile(delays, 0.99), maxMs: Math.max(0, ...delays), wallMs };
}

/** Wall µs per job for `n` jobs of `job`, enqueued at once. */
async function runAll(loom: Loom, job: JobClass<{ i: number }>, n: number, timeoutMs: number): Promise<number> {
  const done = new Countdown(n, `${job.name} completions`);
  const off = loom.on('job:completed', () => done.tick());
  const t0 = performance.now();
  await loom.enqueueMany(
    job,
    Array.from({ length: n }, (_, i) => ({ i })),
  );
  await done.wait(timeoutMs);
  const us = ((performance.now() - t0) * 1000) / n;
  off();
  return us;
}

/**
 * The engine's event-loop delay, sampled by a 1 ms interval timer: each tick's lateness. (Node's
 * `monitorEventLoopDelay` missed whole seconds of a loop blocked by an in-thread handler here.)
 */
class LoopSampler {
  private readonly delays: number[] = [];
  private last = performance.now();
  private readonly timer = setInterval(() => {
    const now = performance.now();
    this.delays.push(Math.max(0, now - this.last - 1));
    this.last = now;
  }, 1);

  stop(): number[] {
    clearInterval(this.timer);
    return this.delays;
  }
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}
