import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { MongoStore } from '@loom/mongo-store';
import type { NewJob } from '@loom/core';
import { benchLogger } from '../loom-jobs.js';
import type { ScenarioResult, ScenarioSpec } from '../scenario.js';

type FlowLimitsSpec = Extract<ScenarioSpec, { kind: 'flow-limits' }>;

const ENGINE = fileURLToPath(new URL('../flow-engine.js', import.meta.url));
const RATE = 50;

type EngineMessage = { t: 'ready' } | { t: 'begin'; run: string; at: number } | { t: 'end'; run: string; job: string; at: number };

const now = (): number => performance.timeOrigin + performance.now();

/** The lease of the kill phase's engines: a killed engine's slots free this long after its last heartbeat. */
const KILL_LEASE_MS = 2_000;
/** The kill phase SIGKILLs one engine process (and starts a new one) this often. */
const KILL_EVERY_MS = 1_000;

/** `count` engine processes on `database`, each reporting to `onMessage`; resolves once all are started. */
async function startEngines(
  spec: FlowLimitsSpec,
  database: string,
  count: number,
  concurrency: number,
  onMessage: (m: EngineMessage, child: ChildProcess) => void,
  leaseMs?: number,
): Promise<ChildProcess[]> {
  const args = [spec.uri, database, String(concurrency), ...(leaseMs === undefined ? [] : [String(leaseMs)])];
  const children = Array.from({ length: count }, () => fork(ENGINE, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve, reject) => {
          child.on('message', (m: EngineMessage) => {
            if (m.t === 'ready') resolve();
            else onMessage(m, child);
          });
          child.once('exit', (code) => reject(new Error(`a flow-limits engine exited (${code}) before it was ready`)));
        }),
    ),
  );
  return children;
}

/** Asks each engine process to stop (SIGKILL after 10 s); resolves once all have exited. */
export async function stopEngines(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
          child.once('exit', () => {
            clearTimeout(kill);
            resolve();
          });
          child.send({ t: 'stop' });
        }),
    ),
  );
}

async function enqueue(spec: FlowLimitsSpec, database: string, name: string, count: number, maxAttempts = 1): Promise<void> {
  const store = new MongoStore({ url: spec.uri, database, logger: benchLogger });
  await store.init();
  const now = new Date();
  for (let done = 0; done < count; done += 1_000) {
    const jobs = Array.from({ length: Math.min(1_000, count - done) }, (_, i): NewJob => ({
      name,
      queue: 'default',
      payload: { i: done + i },
      priority: 0,
      runAt: now,
      maxAttempts,
    }));
    await store.enqueue(jobs, { now });
  }
  await store.close();
}

/** The most starts inside any window of `windowMs` (a start counts for the window that ends at it and later ones). */
function maxInAnyWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let end = 0, start = 0; end < sorted.length; end++) {
    while (sorted[end]! - sorted[start]! >= windowMs) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

/** The most runs overlapping at any instant; a run ending at the instant another starts does not overlap it. */
function peakOverlap(runs: { start: number; end: number }[]): number {
  const events = runs.flatMap((r) => [
    { at: r.start, d: 1 },
    { at: r.end, d: -1 },
  ]);
  events.sort((a, b) => a.at - b.at || a.d - b.d);
  let running = 0;
  let peak = 0;
  for (const e of events) peak = Math.max(peak, (running += e.d));
  return peak;
}

/**
 * Flow limits across processes: `engines` engine processes on one database. A job limited to 50
 * starts per second, run for `rateSeconds` with a backlog larger than that: the observed rate and
 * the most starts in any 1 s window. Then a job with `globalConcurrency: 8` whose runs take 50 ms,
 * the processes at concurrency 10 each: the most runs overlapping at any instant (run intervals
 * are inside their slot holdings, so the overlap of runs bounds the overlap of slots from below);
 * then the same while one process is SIGKILLed every second and replaced (see {@link globalPhase}).
 */
export async function flowLimits(spec: FlowLimitsSpec): Promise<ScenarioResult> {
  const client = new MongoClient(spec.uri);
  await client.connect();
  const rateDb = `${spec.db}_rate`;
  const globalDb = `${spec.db}_global`;
  const killDb = `${spec.db}_kill`;
  for (const db of [rateDb, globalDb, killDb]) await client.db(db).dropDatabase();

  await enqueue(spec, rateDb, 'bench-rate', Math.ceil(RATE * spec.rateSeconds * 1.2) + 100);
  const rateEngines = await startEngines(spec, rateDb, spec.engines, 10, () => {});
  await new Promise((resolve) => setTimeout(resolve, spec.rateSeconds * 1_000 + 2_000));
  await stopEngines(rateEngines);
  // A start is the instant its claim was granted the permit: the claim's `now`, stored as `startedAt`.
  const started = await client
    .db(rateDb)
    .collection<{ startedAt?: Date }>('loom_jobs')
    .find({ name: 'bench-rate', startedAt: { $exists: true } }, { projection: { startedAt: 1 } })
    .toArray();
  const starts = started.map((job) => job.startedAt!.getTime());
  // The measured window: from the first start, rateSeconds long (the backlog never ran dry in it).
  const first = Math.min(...starts);
  const inWindow = starts.filter((t) => t < first + spec.rateSeconds * 1_000);
  const observed = inWindow.length / spec.rateSeconds;

  const steady = await globalPhase(spec, globalDb, spec.globalJobs, false);
  const killed = await globalPhase(spec, killDb, Math.max(60, Math.floor(spec.globalJobs / 2)), true);
  for (const db of [rateDb, globalDb, killDb]) await client.db(db).dropDatabase();
  await client.close();
  return {
    metrics: {
      flowRateObservedPerSec: observed,
      flowRateErrorPct: ((observed - RATE) / RATE) * 100,
      flowRateMaxIn1s: maxInAnyWindow(inWindow, 1_000),
      flowRateMaxIn1sOverall: maxInAnyWindow(starts, 1_000),
      flowGlobalPeak: steady.peak,
      flowGlobalJobsPerSec: steady.jobsPerSec,
      flowGlobalKillPeak: killed.peak,
      flowGlobalKills: killed.kills,
    },
    notes: [
      `${spec.engines} engine processes; rate: ${inWindow.length} starts in ${spec.rateSeconds} s; global: ${steady.jobs} jobs of 50 ms at ${steady.jobsPerSec.toFixed(1)}/s, peak ${steady.peak}; ` +
        `with kills: ${killed.jobs} jobs, ${killed.kills} SIGKILLs (lease ${KILL_LEASE_MS} ms), peak ${killed.peak}`,
    ],
  };
}

/**
 * `jobs` jobs of `bench-global` (globalConcurrency 8, 50 ms runs) through `spec.engines` engine
 * processes of concurrency 10, until every job has run to its end once; the most runs in progress
 * at any instant across the processes. With `kills`, one engine process is SIGKILLed every
 * {@link KILL_EVERY_MS} and a new one started: the runs it had in progress end at the kill (the
 * process is gone), their slots stay taken until their leases expire, and the jobs run again.
 */
async function globalPhase(
  spec: FlowLimitsSpec,
  database: string,
  jobs: number,
  kills: boolean,
): Promise<{ peak: number; jobsPerSec: number; jobs: number; kills: number }> {
  // With kills, a job whose run was cut short runs again (its lease expires): attempts to spare.
  await enqueue(spec, database, 'bench-global', jobs, kills ? 20 : 1);
  const intervals: { start: number; end: number }[] = [];
  const open = new Map<ChildProcess, Map<string, number>>();
  const done = new Set<string>();
  let finished: () => void = () => {};
  const allDone = new Promise<void>((resolve) => (finished = resolve));
  const onMessage = (m: EngineMessage, child: ChildProcess): void => {
    const runs = open.get(child) ?? new Map<string, number>();
    open.set(child, runs);
    if (m.t === 'begin') runs.set(m.run, m.at);
    if (m.t !== 'end') return;
    intervals.push({ start: runs.get(m.run) ?? m.at, end: m.at });
    runs.delete(m.run);
    done.add(m.job);
    if (done.size === jobs) finished();
  };
  const leaseMs = kills ? KILL_LEASE_MS : undefined;
  const started = performance.now();
  const engines = await startEngines(spec, database, spec.engines, 10, onMessage, leaseMs);
  let killCount = 0;
  const starting: Promise<unknown>[] = [];
  const killer = kills
    ? setInterval(() => {
        const i = Math.floor(Math.random() * engines.length);
        const victim = engines[i]!;
        if (victim.exitCode !== null || victim.signalCode !== null) return; // its replacement is still starting
        const at = now();
        victim.kill('SIGKILL');
        killCount += 1;
        // Its runs in progress end with it.
        for (const start of open.get(victim)?.values() ?? []) intervals.push({ start, end: at });
        open.delete(victim);
        starting.push(startEngines(spec, database, 1, 10, onMessage, leaseMs).then(([replacement]) => (engines[i] = replacement!)));
      }, KILL_EVERY_MS)
    : undefined;
  await Promise.race([allDone, new Promise((resolve) => setTimeout(resolve, spec.timeoutMs / 3))]);
  if (killer) clearInterval(killer);
  const seconds = (performance.now() - started) / 1000;
  await Promise.allSettled(starting);
  await stopEngines(engines);
  if (done.size < jobs) throw new Error(`flow-limits: only ${done.size} of ${jobs} globalConcurrency jobs ran to their end in time`);
  return { peak: peakOverlap(intervals), jobsPerSec: jobs / seconds, jobs, kills: killCount };
}
