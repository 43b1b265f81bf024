import { Container } from 'inversify';
import { Loom, MemoryStore } from '@loom/core';
import { Countdown } from '../countdown.js';
import { benchLogger, NoopJob } from '../loom-jobs.js';
import type { ScenarioResult, ScenarioSpec } from '../scenario.js';
import { WindowProfiler } from '../window-profiler.js';
import { threadCpuNs } from '../process-cpu.js';

type MemorySpec = Extract<ScenarioSpec, { kind: 'memory' }>;

/**
 * Loom on MemoryStore: no database, so what is left is the engine's own cost per job. Besides wall
 * time it reports CPU time per job (user + system of this single-threaded process), which a busy
 * shared machine disturbs far less.
 */
export async function memoryThroughput(spec: MemorySpec): Promise<ScenarioResult> {
  const loom = await Loom.create({ container: new Container(), store: new MemoryStore(), jobs: [NoopJob], concurrency: spec.concurrency, logger: benchLogger });
  const done = new Countdown(spec.jobs, 'memory-store completions');
  loom.on('job:completed', () => done.tick());
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < spec.jobs; i += spec.chunk) {
    const n = Math.min(spec.chunk, spec.jobs - i);
    await loom.enqueueMany(
      NoopJob,
      Array.from({ length: n }, (_, j) => ({ i: i + j })),
    );
  }
  const t1 = performance.now();
  const profiler = await WindowProfiler.fromEnv('process');
  const cpu1 = process.cpuUsage();
  const threads1 = threadCpuNs();
  await loom.start();
  await done.wait(spec.timeoutMs);
  const t2 = performance.now();
  const cpu2 = process.cpuUsage();
  const threads2 = threadCpuNs();
  await profiler?.stop();
  await loom.stop();
  const cpuUs = (a: NodeJS.CpuUsage, b: NodeJS.CpuUsage) => b.user - a.user + (b.system - a.system);
  return {
    metrics: {
      jobsPerSec: (spec.jobs / (t2 - t1)) * 1000,
      jobsPerCpuSec: (spec.jobs / cpuUs(cpu1, cpu2)) * 1e6,
      cpuUsPerJob: cpuUs(cpu1, cpu2) / spec.jobs,
      enqueueJobsPerSec: (spec.jobs / (t1 - t0)) * 1000,
      enqueueCpuUsPerJob: cpuUs(cpu0, cpu1) / spec.jobs,
      // The processing's CPU by thread: the JavaScript thread's, and V8's others (mostly the
      // optimising compiler's one-time work on the hot path; bench/README.md, "Issue 33 item 1").
      ...(threads1 && threads2
        ? {
            mainThreadCpuUsPerJob: (threads2.main - threads1.main) / 1000 / spec.jobs,
            otherThreadsCpuUsPerJob: (threads2.other - threads1.other) / 1000 / spec.jobs,
          }
        : {}),
    },
  };
}
