import { spawn, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Binary, type MongoClient } from 'mongodb';
import { MongoStore } from '@loom/mongo-store';
import { CHAOS_JOB, effectsCollection } from './chaos-job.js';

/** The engine script, next to this module in dist/. */
const WORKER = fileURLToPath(new URL('./chaos-worker.js', import.meta.url));

/** Jobs enqueued per tick, and the tick: 30 jobs a second, a steady load two engines keep up with (about 4 runs in flight). */
const BATCH = 3;
const TICK_MS = 100;

/** How long the engines get, after the last enqueue, to finish everything (the killed engine's jobs wait out their lease first). */
export const DRAIN_MS = 60_000;

/** How long a SIGTERMed engine gets to stop before it is killed. */
const STOP_MS = 15_000;

export interface ChaosOptions {
  client: MongoClient;
  uri: string;
  database: string;
  /** Collection prefix of the run (its collections are dropped by the caller). */
  prefix: string;
  durationMs: number;
  /** Replica set or mongos: the engines record effects inside `ctx.transaction`, and a second effect of a job is a failure. */
  transactions: boolean;
  /** Progress lines. */
  log(line: string): void;
}

/** What the chaos run found. Lost, dead, duplicates (with transactions) and engine errors are failures. */
export interface ChaosSummary {
  durationMs: number;
  enqueued: number;
  completed: number;
  /** Enqueued jobs not completed by the end of the drain. */
  lost: number;
  /** Jobs dead-lettered (each had 11 attempts). */
  dead: number;
  /** Effects recorded beyond one per job (with transactions, a completion accepted twice). */
  duplicateCompletions: number;
  /** Jobs run again after a kill (at-least-once; not a failure). */
  reruns: number;
  kills: number;
  /** Jobs the killed engine held when it died. */
  runningAtKill: number;
  /**
   * Sessions of the killed engine ended with killSessions after its death (see
   * {@link endSessionsOf}); 0 when it had run no transaction, or when the server refused.
   */
  sessionsKilled: number;
  /** Engines that exited without being told to, with their last stderr lines. */
  engineErrors: string[];
  passed: boolean;
}

interface Engine {
  name: string;
  child: ChildProcess;
  ready: boolean;
  exited: Promise<number | null>;
  stderr: string[];
  expectedExit: boolean;
  /** Ids (hex) of the sessions it ran transactions in, as it announced them. */
  sessions: Set<string>;
}

function startEngine(o: ChaosOptions, name: string, errors: string[]): Engine {
  const child = spawn(process.execPath, [WORKER], {
    env: {
      ...process.env,
      LOOM_SELFTEST_URI: o.uri,
      LOOM_SELFTEST_DATABASE: o.database,
      LOOM_SELFTEST_PREFIX: o.prefix,
      LOOM_SELFTEST_OWNER: name,
      LOOM_SELFTEST_TRANSACTIONS: o.transactions ? '1' : '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const engine: Engine = { name, child, ready: false, stderr: [], expectedExit: false, exited: Promise.resolve(null), sessions: new Set() };
  engine.exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      if (!engine.expectedExit) errors.push(`${name} exited by itself (${signal ?? `code ${code}`}): ${engine.stderr.slice(-5).join(' | ') || 'no output'}`);
      resolve(code);
    });
  });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line === 'READY') engine.ready = true;
    else if (line.startsWith('SESSION ')) engine.sessions.add(line.slice('SESSION '.length));
  });
  child.stderr!.setEncoding('utf8').on('data', (text: string) => {
    engine.stderr.push(...text.split('\n').filter((l) => l.trim() !== ''));
    if (engine.stderr.length > 50) engine.stderr.splice(0, engine.stderr.length - 50);
  });
  return engine;
}

async function stopEngine(engine: Engine): Promise<void> {
  engine.expectedExit = true;
  if (engine.child.exitCode !== null || engine.child.signalCode !== null) return;
  engine.child.kill('SIGTERM');
  const timer = setTimeout(() => engine.child.kill('SIGKILL'), STOP_MS);
  await engine.exited;
  clearTimeout(timer);
}

/**
 * Ends the sessions a SIGKILLed engine ran transactions in. A transaction it was inside when it died
 * stays open on the server, holding its job's document (and the collections selftest drops at the
 * end) until the server aborts it after transactionLifetimeLimitSeconds, 60 s by default (on the
 * emulator that wait made 5 of 37 runs a minute longer). killSessions ends it at once, and a user
 * may kill the sessions of their own user. When the server refuses, the run goes on and the job
 * waits out the transaction's lifetime. Resolves with how many were ended.
 */
async function endSessionsOf(o: ChaosOptions, engine: Engine): Promise<number> {
  if (engine.sessions.size === 0) return 0;
  const ids = [...engine.sessions].map((hex) => ({ id: new Binary(Buffer.from(hex, 'hex'), Binary.SUBTYPE_UUID) }));
  try {
    await o.client.db('admin').command({ killSessions: ids });
  } catch (err) {
    o.log(
      `chaos: could not end ${engine.name}'s sessions with killSessions (${(err as Error).message}): a transaction it died inside holds its job until the server aborts it (transactionLifetimeLimitSeconds, 60 s by default)`,
    );
    return 0;
  }
  o.log(`chaos: ended ${engine.name}'s ${ids.length} session(s) with killSessions, so that no transaction it died inside holds its job`);
  return ids.length;
}

/**
 * Two engine processes work a steady stream of jobs for `durationMs`; one is SIGKILLed part way
 * (once it holds running jobs) and a new one started in its place. Then the engines get {@link DRAIN_MS} to
 * finish, and the database is counted: every job completed once, none lost or dead.
 */
export async function runChaos(o: ChaosOptions): Promise<ChaosSummary> {
  const quiet = { debug: () => {}, warn: () => {}, error: () => {} };
  const store = new MongoStore({ client: o.client, database: o.database, collectionPrefix: o.prefix, logger: quiet, retention: { completed: false } });
  await store.init();
  const db = o.client.db(o.database);
  const jobs = db.collection(`${o.prefix}jobs`);
  const errors: string[] = [];
  const engines = [startEngine(o, 'engine-a', errors), startEngine(o, 'engine-b', errors)];
  let enqueued = 0;
  let kills = 0;
  let runningAtKill = 0;
  let sessionsKilled = 0;
  const started = performance.now();
  const killAfter = o.durationMs * 0.4;
  try {
    const killOne = async () => {
      const victim = engines[0]!;
      runningAtKill = await jobs.countDocuments({ status: 'running', 'lease.owner': victim.name });
      victim.expectedExit = true;
      victim.child.kill('SIGKILL');
      await victim.exited;
      kills++;
      o.log(`chaos: SIGKILLed ${victim.name} holding ${runningAtKill} running job(s); started engine-c in its place`);
      engines[0] = startEngine(o, 'engine-c', errors);
      sessionsKilled = await endSessionsOf(o, victim);
    };
    while (performance.now() - started < o.durationMs) {
      const now = new Date();
      const batch = Array.from({ length: BATCH }, (_, i) => ({
        name: CHAOS_JOB,
        queue: 'default',
        payload: { key: `k${enqueued + i}` },
        priority: 0,
        runAt: now,
        maxAttempts: 11,
      }));
      await store.enqueue(batch, { now });
      enqueued += BATCH;
      // Killed while it runs jobs, so their leases have to run out and other engines take them over.
      if (
        kills === 0 &&
        performance.now() - started >= killAfter &&
        engines[0]!.ready &&
        (await jobs.countDocuments({ status: 'running', 'lease.owner': engines[0]!.name })) > 0
      ) {
        await killOne();
      }
      await sleep(TICK_MS);
    }
    // An engine that started too slowly to be killed mid-run is killed now, with the queue still full.
    if (kills === 0) await killOne();
    o.log(
      `chaos: enqueued ${enqueued} jobs in ${Math.round((performance.now() - started) / 1000)} s; waiting up to ${DRAIN_MS / 1000} s for the engines to finish them`,
    );
    const drainStarted = performance.now();
    while (performance.now() - drainStarted < DRAIN_MS && errors.length === 0) {
      const unfinished = await jobs.countDocuments({ status: { $in: ['queued', 'running'] } });
      if (unfinished === 0) break;
      await sleep(250);
    }
  } finally {
    await Promise.all(engines.map(stopEngine));
    await store.close();
  }
  const completed = await jobs.countDocuments({ status: 'completed' });
  const dead = await db.collection(`${o.prefix}dead_letters`).countDocuments({});
  const perJob = await db
    .collection(effectsCollection(o.prefix))
    .aggregate<{ _id: string; n: number }>([{ $group: { _id: '$jobId', n: { $sum: 1 } } }, { $match: { n: { $gt: 1 } } }])
    .toArray();
  const extra = perJob.reduce((sum, row) => sum + row.n - 1, 0);
  const duplicateCompletions = o.transactions ? extra : 0;
  const lost = enqueued - completed;
  return {
    durationMs: Math.round(performance.now() - started),
    enqueued,
    completed,
    lost,
    dead,
    duplicateCompletions,
    reruns: o.transactions ? 0 : extra,
    kills,
    runningAtKill,
    sessionsKilled,
    engineErrors: errors,
    passed: lost === 0 && dead === 0 && duplicateCompletions === 0 && errors.length === 0,
  };
}
