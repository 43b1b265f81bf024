import { totalCommands, type CommandTally } from '../command-counter.js';
import { Countdown, sleepUntil } from '../countdown.js';
import { ServerCpu } from '../process-cpu.js';
import { LatencyJob, startProbe } from '../loom-jobs.js';
import { openLoomOnMongo } from '../loom-on-mongo.js';
import { openAgendaOnMongo } from '../agenda-on-mongo.js';
import { percentile } from '../stats.js';
import type { ScenarioResult, ScenarioSpec } from '../scenario.js';

type LatencySpec = Extract<ScenarioSpec, { kind: 'latency' }>;
/** What `steadyRate` needs of a spec (BullMQ's run has a Redis server instead of a MongoDB one). */
type SteadySpec = Pick<LatencySpec, 'jobs' | 'ratePerSec' | 'timeoutMs' | 'serverPid'>;

/** Jobs run (all at once, unmeasured) before the measured ones: connections, JIT and caches warm up. */
const WARMUP = 5;

/** Completions: the first WARMUP go to `warm`, the rest to `measured`. */
export function completionCounters(jobs: number, engine: string): { warm: Countdown; measured: Countdown; onCompleted: () => void } {
  const warm = new Countdown(WARMUP, `${engine} warm-up completions`);
  const measured = new Countdown(jobs, `${engine} completions`);
  return { warm, measured, onCompleted: () => (warm.value < WARMUP ? warm.tick() : measured.tick()) };
}

/**
 * Enqueues `jobs` jobs at a steady `ratePerSec` into an engine already running in this process and
 * records enqueue → handler start for each (after a warm-up). Every command sent from the first
 * measured enqueue to the last completion is charged to the jobs: that is the load of one job's
 * lifecycle at a low rate, including whatever the engine polls meanwhile.
 */
export async function steadyRate(
  spec: SteadySpec,
  counter: CommandTally,
  samples: number[],
  counters: { warm: Countdown; measured: Countdown },
  enqueue: (t0: number) => Promise<unknown>,
): Promise<ScenarioResult> {
  await Promise.all(Array.from({ length: WARMUP }, () => enqueue(performance.now())));
  await counters.warm.wait(spec.timeoutMs);
  samples.length = 0;
  const completed = counters.measured;
  const interval = 1000 / spec.ratePerSec;
  const server = new ServerCpu(spec.serverPid);
  const c0 = counter.snapshot();
  const k0 = counter.categorySnapshot?.();
  const begin = performance.now();
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < spec.jobs; i++) {
    await sleepUntil(begin + i * interval);
    pending.push(enqueue(performance.now()));
  }
  await Promise.all(pending);
  await completed.wait(spec.timeoutMs);
  const commands = counter.since(c0);
  const categories = k0 === undefined ? undefined : counter.categoriesSince?.(k0);
  const { serverCpuUsPerJob } = server.perJob(spec.jobs);
  return {
    metrics: {
      latencyP50Ms: percentile(samples, 50),
      latencyP99Ms: percentile(samples, 99),
      latencyMaxMs: Math.max(...samples),
      lifecycleCommandsPerJob: totalCommands(commands) / spec.jobs,
      // The same commands split by what they were for (see CommandCategory): the job's own
      // (insert, claim, complete), the change stream's, and the rest (e.g. paused-queue reads).
      ...(categories === undefined
        ? {}
        : {
            lifecycleJobCommandsPerJob: (categories.job ?? 0) / spec.jobs,
            lifecycleChangeStreamCommandsPerJob: (categories.changeStream ?? 0) / spec.jobs,
            lifecycleOtherCommandsPerJob: (categories.other ?? 0) / spec.jobs,
          }),
      ...(serverCpuUsPerJob === undefined ? {} : { lifecycleServerCpuUsPerJob: serverCpuUsPerJob }),
    },
    commands,
  };
}

/** No-op round trips timed by {@link coldRoundTripMs}: enough for a steady p50, ~5 s at 20 jobs/s' pace. */
const COLD_ROUND_TRIPS = 100;

/**
 * The p50 of `roundTrip` (a no-op command through the engine's own client), each after the pause
 * between two of the scenario's jobs: what one command costs when client and server were asleep,
 * as every command on the enqueue → start path is at this pace. Measured after the jobs (their
 * command counts are taken), so it adds nothing to them. Loom's path is an insert, the change
 * stream's event and a claim in a row, so about two of these bound its p50 from below
 * (bench/README.md, "what bounds enqueue → start here").
 */
export async function coldRoundTripMs(spec: Pick<LatencySpec, 'ratePerSec'>, roundTrip: () => Promise<unknown>): Promise<number> {
  const pause = 1000 / spec.ratePerSec;
  const times: number[] = [];
  for (let i = 0; i < COLD_ROUND_TRIPS; i++) {
    await sleepUntil(performance.now() + pause);
    const t0 = performance.now();
    await roundTrip();
    times.push(performance.now() - t0);
  }
  return percentile(times, 50);
}

export async function loomLatency(spec: LatencySpec): Promise<ScenarioResult> {
  const h = await openLoomOnMongo(spec, [LatencyJob], 50);
  const samples: number[] = [];
  startProbe.onStart = (t0) => samples.push(performance.now() - t0);
  const counters = completionCounters(spec.jobs, 'loom');
  h.loom.on('job:completed', counters.onCompleted);
  await h.loom.start();
  const result = await steadyRate(spec, h.counter, samples, counters, (t0) => h.loom.enqueue(LatencyJob, { t0 }));
  const admin = h.counter.client.db('admin');
  result.metrics.coldRoundTripP50Ms = await coldRoundTripMs(spec, () => admin.command({ ping: 1 }));
  await h.close();
  return result;
}

export async function agendaLatency(spec: LatencySpec): Promise<ScenarioResult> {
  const samples: number[] = [];
  const counters = completionCounters(spec.jobs, 'agenda');
  const h = await openAgendaOnMongo(
    spec,
    (agenda) => {
      agenda.define<{ t0: number }>('bench-latency', async (job) => {
        samples.push(performance.now() - job.attrs.data.t0);
      });
      agenda.on('complete:bench-latency', counters.onCompleted);
    },
    { concurrency: 50, ...(spec.processEveryMs === undefined ? {} : { processEveryMs: spec.processEveryMs }) },
  );
  await h.agenda.start();
  const result = await steadyRate(spec, h.counter, samples, counters, (t0) => h.agenda.now('bench-latency', { t0 }));
  await h.close();
  return result;
}
