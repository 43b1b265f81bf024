/**
 * `npm run chaos`: N worker processes run ChaosEffect jobs on the emulator (its own process, by
 * its bin) while this controller enqueues them, SIGKILLs and restarts random workers, and
 * SIGSTOPs workers past their lease before SIGCONTing them (a GC pause). The oracle then checks
 * the database and the workers' ledgers; the last line is the verdict, and the exit code is 1
 * when something was lost, applied twice or completed by a stale lease, or when more
 * ChaosLimited runs worked at once than their globalConcurrency allows (concurrency-peak.ts).
 */
import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient, type Db } from 'mongodb';
import { CHAOS_GLOBAL_CONCURRENCY, LIMITED_NAME } from './chaos-job.js';
import type { LedgerEntry } from './ledger.js';
import { concurrencyPeak } from './concurrency-peak.js';
import { chaosConfig, chaosPartitions } from './config.js';
import { chaosEnqueuer, type ChaosKind } from './enqueuer.js';
import { readLedgers } from './ledger.js';
import { spawnNode, type NodeProcess } from './node-process.js';
import { endSessionsOf, sessionsFileOf } from './orphaned-transactions.js';
import { finalLine, judge, passed } from './oracle.js';
import { readRunRecord } from './run-record.js';
import { readShardStats, shardDatabase, shardFigures, shardLine, shardReport, shardsPassed, type ShardFigures } from './shard-stats.js';
import { changeStreamResumes, cronCheck, flowSlotsHeld, memoryGrowth, stuckRunning } from './soak-report.js';
import { CHILD_NAME, childKey, CRON_NAME, FLOW_NAME, PLAIN_NAME } from './soak-jobs.js';
import { startStepDowns, type StepDowns } from './step-downs.js';

const here = dirname(fileURLToPath(import.meta.url));
const ext = extname(fileURLToPath(import.meta.url));
const WORKER = join(here, `worker${ext}`);
const EMULATOR_BIN = resolve(here, '../../packages/mongo-emulator', ext === '.ts' ? 'src/bin.ts' : 'dist/bin.js');

const config = chaosConfig(process.argv.slice(2), process.env);
const started = Date.now();
const log = (msg: string) => process.stdout.write(`[chaos +${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}\n`);
const random = (n: number) => Math.floor(Math.random() * n);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Worker {
  slot: number;
  owner: string;
  proc: NodeProcess;
  ready: boolean;
  paused: boolean;
  /** Killed on purpose by the controller. */
  killed: boolean;
}

log(`config ${JSON.stringify(config)}`);
const runDir = mkdtempSync(join(tmpdir(), 'loom-chaos-'));
const sharded = config.shards > 0;
/** MongoStore's `partitions` for every process of the run ({} unpartitioned). */
const partitions = config.partitions > 1 ? chaosPartitions(config.partitions) : {};
const emulator = spawnNode(EMULATOR_BIN, ['--port', '0', ...(sharded ? ['--shards', String(config.shards)] : [])], {});
const uri = await emulator.waitForLine(/^mongodb:\/\//, config.startupMs);
const database = `chaos_${Date.now()}`;
const client = new MongoClient(uri);
await client.connect();
const db = client.db(database);
if (sharded) {
  // Before Loom's first start on the database, as `loom shard-plan` tells an operator.
  const commands = await shardDatabase(client, database, chaosPartitions(config.partitions));
  log(`sharded ${database} on ${config.shards} virtual shards, queues of ${config.partitions} partitions (${commands} commands of loom shard-plan)`);
}
const enqueuer = await chaosEnqueuer(client, database, partitions);
// The routing counts start here: the set-up's DDL is not the engines' hot path.
if (sharded) await readShardStats(client, true);
log(`emulator ${uri}, database ${database}, ledgers in ${runDir}`);

let generation = 0;
const workers: Worker[] = [];
const ledgerOf = (owner: string) => join(runDir, `${owner}.jsonl`);
function startWorker(slot: number): Worker {
  const owner = `w${slot}.${++generation}`;
  const proc = spawnNode(
    WORKER,
    [],
    {
      MONGODB_URI: uri,
      DATABASE: database,
      LEDGER: ledgerOf(owner),
      OWNER: owner,
      CONCURRENCY: String(config.concurrency),
      LEASE_MS: String(config.leaseMs),
      MAX_DELAY_MS: String(config.maxDelayMs),
      PARTITIONS: JSON.stringify(partitions),
      ...(soak ? { SOAK: '1', MEMORY_EVERY_MS: '5000' } : {}),
    },
    process.execArgv,
    join(runDir, `${owner}.stderr.log`),
  );
  const worker: Worker = { slot, owner, proc, ready: false, paused: false, killed: false };
  workers[slot] = worker;
  proc.waitForLine(/^READY /, config.startupMs).then(
    () => (worker.ready = true),
    () => undefined, // an exit is handled below; a worker too slow to start is waited for
  );
  // A worker that dies without being killed is a defect (an unhandled error, a wedged start):
  // counted, reported with its stderr, and replaced so the run goes on.
  void proc.exited.then((how) => {
    if (worker.killed || stopping) return;
    faults.crashes++;
    log(`worker ${owner} exited by itself (${String(how)}): ${proc.stderr().trim().slice(-1500)}`);
    startWorker(slot);
  });
  return worker;
}

const faults = { kills: 0, pauses: 0, crashes: 0 };
const soak = config.soakMs > 0;
/** In a soak, worker slot 0 is never killed or paused: its memory over the whole run is what the soak reports. */
const OBSERVER_SLOT = 0;
let observer: string | undefined;
let stepDowns: StepDowns | undefined;
/** The most jobs seen stuck `running` past their lease at once (sampled during a soak). */
let stuckMax = 0;
/** Jobs stuck `running` past their lease once every job finished (a soak's). */
const soakEnd = { stuck: 0 };
let stoppingSamples = false;
/** Periods of STALL_MS or more in which no job finished while some were unfinished (see config's TRANSACTION_LIFETIME_MS). */
const STALL_MS = 10_000;
const progress = { finished: 0, since: Date.now(), stalls: [] as number[] };
let stopping = false;
let failure: Error | undefined;
const keys = Array.from({ length: config.jobs }, (_, i) => `k${i}`);
/**
 * What job key i gets. Every 4th key is a ChaosLimited job (globalConcurrency), the others
 * ChaosEffect. A soak's keys are mostly plain jobs, so 200,000 fit in half an hour: of 40 keys,
 * one ChaosLimited, four ChaosEffect, one workflow (with a child of its own), the rest plain.
 */
function kindOf(i: number): ChaosKind {
  if (!soak) return i % 4 === 0 ? 'limited' : 'effect';
  const slot = i % 40;
  return slot === 0 ? 'limited' : slot <= 4 ? 'effect' : slot === 5 ? 'flow' : 'plain';
}
/** The names of the jobs the controller enqueues (their children and the cron runs are counted apart). */
const ENQUEUED_NAMES = ['chaos-effect', LIMITED_NAME, PLAIN_NAME, FLOW_NAME];
const flowKeys = keys.filter((_, i) => kindOf(i) === 'flow');
/** Keys with no transactional effect: the oracle wants them completed once, nothing more. */
const untransactional = new Set([...keys.filter((_, i) => kindOf(i) === 'plain' || kindOf(i) === 'flow'), ...flowKeys.map(childKey)]);

try {
  for (let slot = 0; slot < config.workers; slot++) startWorker(slot);
  observer = workers[OBSERVER_SLOT]?.owner;
  await waitFor(() => workers.every((w) => w.ready), config.startupMs, 'every worker to start');
  log(`${config.workers} workers ready`);
  stepDowns = startStepDowns(client, config.stepDownEveryMs, config.stepDownMs, log);
  const sampling = soak ? sampleStuck() : Promise.resolve();

  const enqueueing = enqueueInBatches();
  await injectFaults();
  await enqueueing;
  log(`faults done: ${faults.kills} kills, ${faults.pauses} pauses; waiting for the jobs to finish`);
  await waitFor(
    async () => (await terminalJobs(db)) === config.jobs,
    config.deadlineMs - (Date.now() - started),
    `all ${config.jobs} jobs to finish (deadline ${config.deadlineMs / 1000} s from the start)`,
    soak ? 2_000 : 250,
  );
  log('every job finished');
  await stepDowns.stop();
  if (soak) {
    // No new cron slot from now on; those enqueued must all run.
    await retrying(() => enqueuer.pauseSchedule(CRON_NAME), 'pausing the cron schedule');
    await waitFor(
      async () =>
        (await db.collection('loom_jobs').countDocuments({ name: { $in: [CRON_NAME, CHILD_NAME] }, status: { $in: ['queued', 'running', 'waiting'] } })) === 0,
      120_000,
      'the cron runs and children to finish',
      1_000,
    );
    soakEnd.stuck = await stuckRunning(db, new Date(), config.leaseMs);
  }
  stoppingSamples = true;
  await sampling;
} catch (err) {
  failure = err as Error;
  log(`run failed: ${failure.message}`);
}

await stepDowns?.stop();
await stopWorkers();
// Read before the oracle's own reads; only writes are judged anyway (shard-stats.ts).
const shards: ShardFigures | undefined = sharded ? shardFigures(await readShardStats(client), database, config.partitions) : undefined;
const ledger = readLedgers(runDir);
const verdict = judge({ ...(await readRunRecord(db, [...keys, ...(soak ? flowKeys.map(childKey) : [])], ledger)), untransactional });
const soakFigures = soak ? await soakReport(ledger) : undefined;
const peak = concurrencyPeak(ledger, LIMITED_NAME);
await enqueuer.close();
const overLimit = peak.peak > CHAOS_GLOBAL_CONCURRENCY;
const stepDownsMissing = config.stepDownEveryMs > 0 && (stepDowns?.count ?? 0) === 0;
if (stepDownsMissing) log('no step-down took effect, although the run asked for them');
const ok =
  passed(verdict) && !overLimit && !failure && faults.crashes === 0 && !stepDownsMissing && (soakFigures?.ok ?? true) && (shards ? shardsPassed(shards) : true);
if (ok || process.env.CHAOS_KEEP !== '1') {
  await client.close();
  emulator.process.kill('SIGTERM');
  await emulator.exited;
}
// A failed run keeps its ledgers (and, with CHAOS_KEEP=1, its emulator) for a post-mortem.
if (ok) rmSync(runDir, { recursive: true, force: true });
else log(`ledgers kept in ${runDir}; database ${database} at ${uri}`);

log(`stale completions refused by the fence: ${verdict.staleAcksRefused}; workers that died by themselves: ${faults.crashes}`);
log(
  `stalls (${STALL_MS / 1000} s or more without a job finishing): ${progress.stalls.length}${progress.stalls.length ? ` (${progress.stalls.map((ms) => `${(ms / 1000).toFixed(0)} s`).join(', ')})` : ''}`,
);
for (const example of verdict.examples) log(example);
log(
  `${LIMITED_NAME} (globalConcurrency ${CHAOS_GLOBAL_CONCURRENCY}): ${peak.runs} runs, at most ${peak.peak} working at once with a valid lease${peak.at === undefined ? '' : ` (first at +${((peak.at - started) / 1000).toFixed(1)} s)`}${peak.unmatched ? `; ${peak.unmatched} run(s) without their claim in the ledgers, not counted` : ''}${overLimit ? ': OVER THE LIMIT' : ''}`,
);
log(`duration ${((Date.now() - started) / 1000).toFixed(1)} s`);
if (soakFigures) for (const line of soakFigures.lines) log(line);
if (shards) for (const line of shardReport(shards)) log(line);
const stepDownFigure = config.stepDownEveryMs > 0 ? ` stepdowns=${stepDowns?.count ?? 0}` : '';
process.stdout.write(
  `${finalLine(verdict, faults)}${stepDownFigure} global_concurrency_peak=${peak.peak}/${CHAOS_GLOBAL_CONCURRENCY}${soakFigures ? ` ${soakFigures.figures}` : ''}${shards ? ` ${shardLine(shards)}` : ''}\n`,
);
if (ok || process.env.CHAOS_KEEP !== '1') process.exit(ok ? 0 : 1);

/** Enqueues the jobs in batches while the workers already run them. */
async function enqueueInBatches(): Promise<void> {
  const size = Math.ceil(config.jobs / config.batches);
  for (let i = 0; i < config.batches; i++) {
    // A soak spreads its batches over nine tenths of its duration (pacing, not synchronisation).
    if (soak) await sleep(started + (i * config.soakMs * 0.9) / config.batches - Date.now());
    // The keys make a retried batch harmless: what was stored already comes back deduplicated.
    const batch = keys.slice(i * size, (i + 1) * size);
    for (const kind of ['effect', 'limited', 'plain', 'flow'] as const) {
      const ofKind = batch.filter((_, j) => kindOf(i * size + j) === kind);
      if (ofKind.length > 0) await retrying(() => enqueuer.enqueue(ofKind, kind), `enqueue batch ${i} (${kind})`);
    }
  }
  log(`enqueued ${config.jobs} jobs`);
}

/**
 * Kills and pauses at random moments until both targets are met, spread over the whole run:
 * fault i waits until i/(faults + 1) of the jobs have finished, so early and late jobs alike run
 * through them.
 */
async function injectFaults(): Promise<void> {
  const pausing: Promise<void>[] = [];
  const total = config.kills + config.pauses;
  while (faults.kills < config.kills || faults.pauses < config.pauses) {
    const due = Math.floor((config.jobs * (faults.kills + faults.pauses + 1)) / (total + 1));
    // The count reads every finished job: in a soak (hundreds of thousands) it is polled sparingly.
    await waitFor(async () => (await terminalJobs(db)) >= due, config.deadlineMs, `${due} jobs to finish before the next fault`, soak ? 2_000 : 250);
    // Spacing between faults, not synchronisation: what happens next is checked by the oracle.
    await sleep(200 + random(600));
    const live = workers.filter((w) => w.ready && !w.paused && !(soak && w.slot === OBSERVER_SLOT));
    if (live.length === 0) continue;
    const victim = live[random(live.length)];
    const pauseDue = faults.pauses < config.pauses && !workers.some((w) => w.paused) && (faults.kills >= config.kills || Math.random() < config.pauses / total);
    if (pauseDue) pausing.push(pause(victim));
    else if (faults.kills < config.kills) await kill(victim);
  }
  await Promise.all(pausing);
}

async function kill(worker: Worker): Promise<void> {
  worker.killed = true;
  worker.proc.process.kill('SIGKILL');
  await worker.proc.exited;
  faults.kills++;
  startWorker(worker.slot);
  // A transaction it left open would hold its job's document for the server's 60 s transaction
  // lifetime, stalling every claim that reaches it: end its sessions as the server would, sooner.
  const ended = await retrying(() => endSessionsOf(client, sessionsFileOf(ledgerOf(worker.owner))), `ending the sessions of ${worker.owner}`);
  log(`killed ${worker.owner}; ended its ${ended} session(s)`);
}

/** SIGSTOP past the lease, then SIGCONT: the worker wakes up holding leases others took over. */
async function pause(worker: Worker): Promise<void> {
  worker.paused = true;
  worker.proc.process.kill('SIGSTOP');
  faults.pauses++;
  await sleep(config.pauseMs);
  worker.proc.process.kill('SIGCONT');
  worker.paused = false;
}

async function stopWorkers(): Promise<void> {
  stopping = true;
  await Promise.all(
    workers.map(async (w) => {
      if (!w.proc.alive) return;
      if (w.paused) w.proc.process.kill('SIGCONT');
      w.proc.process.kill('SIGTERM');
      const timer = setTimeout(() => w.proc.process.kill('SIGKILL'), 30_000);
      await w.proc.exited;
      clearTimeout(timer);
    }),
  );
}

/** Jobs finished so far; also notes a stall when the count moves again after STALL_MS or more. */
async function terminalJobs(db: Db): Promise<number> {
  let finished: number;
  try {
    finished = await db.collection('loom_jobs').countDocuments({ status: { $in: ['completed', 'dead'] }, name: { $in: ENQUEUED_NAMES } });
  } catch (err) {
    // A step-down interrupts the count: the last one stands until the next.
    if (stepDowns === undefined || config.stepDownEveryMs === 0) throw err;
    return progress.finished;
  }
  if (finished !== progress.finished) {
    const still = Date.now() - progress.since;
    if (still >= STALL_MS) {
      progress.stalls.push(still);
      log(`stall: no job finished for ${(still / 1000).toFixed(1)} s (at ${progress.finished} of ${config.jobs})`);
    }
    progress.finished = finished;
    progress.since = Date.now();
  }
  return finished;
}

/** Every 10 s of a soak: jobs stuck `running` well past their lease (nobody claimed them back). */
async function sampleStuck(): Promise<void> {
  while (!stoppingSamples) {
    await sleep(10_000);
    try {
      stuckMax = Math.max(stuckMax, await stuckRunning(db, new Date(), 10 * config.leaseMs));
    } catch {
      // a step-down interrupted the count; the next sample counts again
    }
  }
}

/** The soak's own checks, after the workers stopped. */
async function soakReport(ledger: LedgerEntry[]): Promise<{ ok: boolean; figures: string; lines: string[] }> {
  // Slots of killed runs end with their lease: wait one lease before counting what is still held.
  await sleep(config.leaseMs + 500);
  const slots = await flowSlotsHeld(db, new Date());
  const memory = observer === undefined ? null : memoryGrowth(ledger, observer, started, config.soakMs);
  const cron = await cronCheck(db, 5_000);
  const resumes = changeStreamResumes(ledger);
  const growth = memory ? `${(memory.growth * 100).toFixed(1)}%` : 'n/a';
  const ok =
    slots === 0 &&
    soakEnd.stuck === 0 &&
    stuckMax === 0 &&
    memory !== null &&
    memory.growth < 0.1 &&
    cron.gaps === 0 &&
    cron.unfinished === 0 &&
    cron.fires > 0;
  const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  return {
    ok,
    figures: `rss_growth=${growth} flow_slots_held=${slots} stuck_running=${soakEnd.stuck} stuck_running_max=${stuckMax} change_stream_resumes=${resumes} cron_fires=${cron.fires} cron_gaps=${cron.gaps} cron_unfinished=${cron.unfinished}`,
    lines: [
      memory
        ? `memory of ${observer} (never killed): ${mb(memory.warm)} after warm-up, ${mb(memory.end)} at the end (medians of 2 minutes, ${memory.samples} samples): ${growth}${memory.growth < 0.1 ? '' : ': OVER 10 %'}`
        : `memory of ${observer}: too few samples to compare (the soak was too short)`,
      `flow slots held once every job finished: ${slots}; jobs stuck running past their lease: ${soakEnd.stuck} at the end, at most ${stuckMax} at once during the run`,
      `change streams resumed: ${resumes}; cron: ${cron.fires} runs, ${cron.gaps} slots missing, ${cron.unfinished} not completed`,
    ],
  };
}

async function waitFor(check: () => boolean | Promise<boolean>, ms: number, what: string, everyMs = 100): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

async function retrying<T>(fn: () => Promise<T>, what: string): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= 5) throw err;
      log(`${what} failed (${(err as Error).message}); retrying`);
      await sleep(200 * attempt);
    }
  }
}
