import type { Loom } from '@loom/core';
import { totalCommands, type CommandTally, type CommandCounts } from '../command-counter.js';
import { Countdown } from '../countdown.js';
import { ServerCpu, threadCpuNs, type ThreadCpuNs } from '../process-cpu.js';
import { NoopJob } from '../loom-jobs.js';
import { openLoomOnMongo } from '../loom-on-mongo.js';
import { openAgendaOnMongo } from '../agenda-on-mongo.js';
import type { ScenarioResult, ScenarioSpec } from '../scenario.js';
import { WindowProfiler } from '../window-profiler.js';

type ThroughputSpec = Extract<ScenarioSpec, { kind: 'throughput' }>;
type BatchedSpec = Extract<ScenarioSpec, { kind: 'batched' }>;
/** What `measure` needs of a spec (BullMQ's run has a Redis server instead of a MongoDB one). */
type MeasuredSpec = Pick<ThroughputSpec, 'jobs' | 'timeoutMs' | 'serverPid'>;

/** Timings and command counts of "enqueue N, then process N". */
interface Phases {
  enqueueMs: number;
  processMs: number;
  /** CPU time of this (worker) process while processing, ms. */
  processCpuMs: number;
  /** Of which in the kernel (socket reads and writes, mostly), ms. */
  processSystemCpuMs: number;
  /** The same CPU split by thread, ns (Linux only): the JavaScript thread and V8's and libuv's others. */
  processThreadCpuNs?: ThreadCpuNs;
  /** Server CPU per job over both phases, when readable. */
  server: { serverCpuUsPerJob?: number };
  enqueueCommands: CommandCounts;
  processCommands: CommandCounts;
}

/** Figures shared by every throughput-style run. */
export function figures(jobs: number, p: Phases): ScenarioResult {
  const all: CommandCounts = { ...p.enqueueCommands };
  for (const [k, v] of Object.entries(p.processCommands)) all[k] = (all[k] ?? 0) + v;
  return {
    metrics: {
      throughputJobsPerSec: (jobs / p.processMs) * 1000,
      enqueueJobsPerSec: (jobs / p.enqueueMs) * 1000,
      throughputCommandsPerJob: totalCommands(all) / jobs,
      enqueueCommandsPerJob: totalCommands(p.enqueueCommands) / jobs,
      processCommandsPerJob: totalCommands(p.processCommands) / jobs,
      workerCpuUsPerJob: (p.processCpuMs * 1000) / jobs,
      workerSystemCpuUsPerJob: (p.processSystemCpuMs * 1000) / jobs,
      ...(p.processThreadCpuNs === undefined
        ? {}
        : {
            workerMainThreadCpuUsPerJob: p.processThreadCpuNs.main / 1000 / jobs,
            workerOtherThreadsCpuUsPerJob: p.processThreadCpuNs.other / 1000 / jobs,
          }),
      ...p.server,
    },
    commands: all,
  };
}

/** Enqueues with `enqueue`, then starts processing and waits for every completion. */
export async function measure(
  spec: MeasuredSpec,
  counter: CommandTally,
  enqueue: () => Promise<void>,
  start: () => Promise<void>,
  done: Countdown,
): Promise<Phases> {
  const server = new ServerCpu(spec.serverPid);
  const c0 = counter.snapshot();
  const t0 = performance.now();
  await enqueue();
  const t1 = performance.now();
  const enqueueCommands = counter.since(c0);
  const c1 = counter.snapshot();
  const profiler = await WindowProfiler.fromEnv('process');
  const threads = threadCpuNs();
  const cpu = process.cpuUsage();
  await start();
  await done.wait(spec.timeoutMs);
  const t2 = performance.now();
  const used = process.cpuUsage(cpu);
  const threadsAfter = threadCpuNs();
  await profiler?.stop();
  return {
    enqueueMs: t1 - t0,
    processMs: t2 - t1,
    processCpuMs: (used.user + used.system) / 1000,
    processSystemCpuMs: used.system / 1000,
    ...(threads && threadsAfter ? { processThreadCpuNs: { main: threadsAfter.main - threads.main, other: threadsAfter.other - threads.other } } : {}),
    server: server.perJob(spec.jobs),
    enqueueCommands,
    processCommands: counter.since(c1),
  };
}

/** Loom on MongoStore: enqueue N jobs with `enqueue`, start the engine, wait for N completions. */
async function loomRun(spec: ThroughputSpec | BatchedSpec, enqueue: (loom: Loom) => Promise<void>): Promise<ScenarioResult> {
  const h = await openLoomOnMongo(spec, [NoopJob], spec.concurrency);
  const done = new Countdown(spec.jobs, 'loom completions');
  h.loom.on('job:completed', () => done.tick());
  const phases = await measure(
    spec,
    h.counter,
    () => enqueue(h.loom),
    () => h.loom.start(),
    done,
  );
  await h.close();
  return figures(spec.jobs, phases);
}

/** Loom on MongoStore, unbatched: one `enqueue` call per job. */
export function loomThroughput(spec: ThroughputSpec): Promise<ScenarioResult> {
  return loomRun(spec, async (loom) => {
    for (let i = 0; i < spec.jobs; i++) await loom.enqueue(NoopJob, { i });
  });
}

/** Loom on MongoStore, batched: `enqueueMany` in chunks; claims batch as the engine chooses. */
export function loomBatched(spec: BatchedSpec): Promise<ScenarioResult> {
  return loomRun(spec, async (loom) => {
    for (let i = 0; i < spec.jobs; i += spec.chunk) {
      const n = Math.min(spec.chunk, spec.jobs - i);
      await loom.enqueueMany(
        NoopJob,
        Array.from({ length: n }, (_, j) => ({ i: i + j })),
      );
    }
  });
}

/** Agenda 6: N jobs enqueued with `agenda.now`, then processed. */
export async function agendaThroughput(spec: ThroughputSpec): Promise<ScenarioResult> {
  const done = new Countdown(spec.jobs, 'agenda completions');
  const h = await openAgendaOnMongo(
    spec,
    (agenda) => {
      agenda.define('bench-noop', async () => {});
      agenda.on('complete:bench-noop', () => done.tick());
    },
    { concurrency: spec.concurrency },
  );
  const phases = await measure(
    spec,
    h.counter,
    async () => {
      for (let i = 0; i < spec.jobs; i++) await h.agenda.now('bench-noop', { i });
    },
    () => h.agenda.start(),
    done,
  );
  await h.close();
  return figures(spec.jobs, phases);
}
