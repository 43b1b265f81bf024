/**
 * A chaos worker process: a Loom app on MongoStore running {@link ChaosEffect} and {@link ChaosLimited}.
 *
 * env: MONGODB_URI, DATABASE, LEDGER (its ledger file), OWNER; optional CONCURRENCY (4),
 * LEASE_MS (1500), GRACE_MS (2000), MAX_DELAY_MS (20), FIXED_DELAY_MS (every run waits exactly this long
 * instead of a random time up to MAX_DELAY_MS), IGNORE_ABORT (1: handlers ignore ctx.signal),
 * SERVER_SELECTION_MS (driver timeout while the database is unreachable, 10000), STARTUP_MS (how long
 * a start that cannot reach MongoDB is retried, 60000), SOAK (1: also runs the cron schedule of a soak),
 * MEMORY_EVERY_MS (notes the process's memory in the ledger this often), PARTITIONS (MongoStore's
 * `partitions` as JSON, e.g. `{"default":8}`: the same in every process of a run).
 * Prints `READY <owner>` once started. SIGTERM: prints `STOPPING`, then a graceful stop (stop claiming, finish or release
 * within the grace), prints `STOPPED`, exits 0. A second SIGTERM: releases the leases it still
 * holds (best effort, at most 500 ms) and exits 130; whatever it could not release, others
 * reclaim once the lease expires.
 */
import 'reflect-metadata';
import { Container } from 'inversify';
import { Loom, LoomError, type Logger } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import { CHAOS_HANDLER, ChaosEffect, ChaosLimited, type ChaosHandlerOptions } from './chaos-job.js';
import { Ledger } from './ledger.js';
import { noteTransactionSessions, sessionsFileOf } from './orphaned-transactions.js';
import { recordingStore } from './recording-store.js';
import { ChaosChild, ChaosCron, ChaosFlow, ChaosPlain } from './soak-jobs.js';

const env = process.env;
const { MONGODB_URI, DATABASE, LEDGER, OWNER } = env;
if (!MONGODB_URI || !DATABASE || !LEDGER || !OWNER) throw new Error('chaos worker needs MONGODB_URI, DATABASE, LEDGER and OWNER');
const num = (name: string, fallback: number): number => (env[name] === undefined ? fallback : Number(env[name]));

const logger = stderrLogger({ owner: OWNER });
const selectionMs = num('SERVER_SELECTION_MS', 10_000);
const mongo = new MongoStore({
  url: MONGODB_URI,
  database: DATABASE,
  pollInterval: '100ms',
  retention: { completed: false },
  partitions: env.PARTITIONS === undefined ? {} : (JSON.parse(env.PARTITIONS) as Record<string, number>),
  // monitorCommands: the sessions of its transactions are noted for the controller (see orphaned-transactions.ts).
  clientOptions: { serverSelectionTimeoutMS: selectionMs, connectTimeoutMS: selectionMs, monitorCommands: true },
  // Workers start on a loaded machine: a slow first handshake is not an outage (default 5s).
  connectTimeout: '60s',
  logger,
});
const ledger = new Ledger(LEDGER);
const { store, held } = recordingStore(mongo, ledger, OWNER);
noteTransactionSessions(mongo.client, sessionsFileOf(LEDGER));
noteChangeStreamResumes();
if (env.MEMORY_EVERY_MS !== undefined) {
  const sample = () => {
    const { rss, heapUsed } = process.memoryUsage();
    ledger.append({ t: 'mem', owner: OWNER, at: Date.now(), rss, heapUsed });
  };
  setInterval(sample, num('MEMORY_EVERY_MS', 5_000)).unref();
}

const container = new Container();
const handler: ChaosHandlerOptions = {
  db: mongo.client.db(DATABASE),
  owner: OWNER,
  maxDelayMs: num('MAX_DELAY_MS', 20),
  ignoreAbort: env.IGNORE_ABORT === '1',
  note: (entry) => ledger.append(entry),
  ...(env.FIXED_DELAY_MS === undefined ? {} : { fixedDelayMs: num('FIXED_DELAY_MS', 0) }),
};
container.bind(CHAOS_HANDLER).toConstantValue(handler);

const loom = await createLoom();

let stopping = false;
process.on('SIGTERM', () => {
  if (stopping) {
    void hardStop();
    return;
  }
  stopping = true;
  process.stdout.write('STOPPING\n');
  loom
    .stop()
    .then(() => mongo.close())
    .then(
      () => {
        process.stdout.write('STOPPED\n');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'graceful stop failed');
        process.exit(1);
      },
    );
});
// Started only once SIGTERM is handled: a test that sees this worker's leases may stop it at once.
await loom.start();
process.stdout.write(`READY ${OWNER}\n`);

/**
 * Loom.create, which connects the store. With a short SERVER_SELECTION_MS (the outage scenario's
 * 500 ms), a loaded machine can miss the first connection: that is retried until STARTUP_MS
 * (60000) have passed, as an app waiting for its database at boot would.
 */
async function createLoom(): Promise<Loom> {
  const deadline = Date.now() + num('STARTUP_MS', 60_000);
  for (;;) {
    try {
      return await Loom.create({
        container,
        store,
        jobs: [ChaosEffect, ChaosLimited, ChaosPlain, ChaosChild, ChaosFlow, ...(env.SOAK === '1' ? [ChaosCron] : [])],
        concurrency: num('CONCURRENCY', 4),
        lease: num('LEASE_MS', 1500),
        shutdownGrace: num('GRACE_MS', 2000),
        pollInterval: '100ms',
        owner: OWNER,
        logger,
      });
    } catch (err) {
      if (!LoomError.is(err, 'STORE_UNREACHABLE') || Date.now() > deadline) throw err;
      logger.warn({ err }, 'MongoDB not reachable at start; trying again');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/**
 * Notes each change stream opened from a resume point (the driver resuming after a resumable error
 * such as a step-down, or Loom's watcher reopening after the last event it delivered): a soak
 * reports how many there were. Seen through the driver's command monitoring.
 */
function noteChangeStreamResumes(): void {
  mongo.client.on('commandStarted', (event) => {
    if (event.commandName !== 'aggregate') return;
    const stage = (event.command.pipeline as Record<string, { resumeAfter?: unknown; startAfter?: unknown }>[] | undefined)?.[0]?.$changeStream;
    if (stage && (stage.resumeAfter !== undefined || stage.startAfter !== undefined)) ledger.append({ t: 'resume', owner: OWNER!, at: Date.now() });
  });
}

async function hardStop(): Promise<void> {
  const now = new Date();
  const releases = [...held.values()].map((lease) =>
    mongo.release(lease, now).catch((err: unknown) => logger.warn({ err, jobId: lease.jobId }, 'release on hard stop failed; the lease will expire')),
  );
  await Promise.race([Promise.all(releases), new Promise((resolve) => setTimeout(resolve, 500))]);
  process.exit(130);
}

/** Warnings and errors to stderr as JSON lines (stdout carries the protocol lines). */
function stderrLogger(bindings: Record<string, unknown>): Logger {
  const write = (level: string) => (obj: Record<string, unknown>, msg?: string) => {
    const err = obj.err instanceof Error ? { err: `${obj.err.name}: ${obj.err.message}` } : {};
    process.stderr.write(`${JSON.stringify({ level, msg, ...bindings, ...obj, ...err })}\n`);
  };
  return {
    debug: () => {},
    info: () => {},
    warn: write('warn'),
    error: write('error'),
    child: (more) => stderrLogger({ ...bindings, ...more }),
  };
}
