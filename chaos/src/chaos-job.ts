import 'reflect-metadata';
import { inject } from 'inversify';
import type { ClientSession, Db } from 'mongodb';
import { Job, type JobContext } from '@loom/core';
import type { RunEntry } from './ledger.js';

/**
 * The collections the chaos handler writes to. The effects log gets one row per handler run,
 * outside any transaction (re-executions show there); the transactional effect is a per-key
 * counter written through `ctx.transaction`, with no unique index: nothing but Loom's fenced,
 * transactional completion keeps it at one increment per job.
 */
export const EFFECTS = 'chaos_effects';
export const TX_EFFECTS = 'chaos_tx_effects';

/** One row of the transactional effect: its key's counter and the runs whose transaction committed it. */
export interface TxEffectRow {
  key: string;
  n: number;
  runs: { jobId: string; attempt: number; owner: string }[];
}

/** How the handler behaves in this process (bound in the container as {@link CHAOS_HANDLER}). */
export interface ChaosHandlerOptions {
  db: Db;
  owner: string;
  /** Each run waits a random time up to this before writing, so runs overlap kills and pauses. */
  maxDelayMs: number;
  /** Keep running after ctx.signal aborts (a handler that ignores shutdown). */
  ignoreAbort: boolean;
  /** Each run waits exactly this long instead of a random time (a test's fixed-length runs). */
  fixedDelayMs?: number;
  /** Notes when each run starts and stops working (the worker's ledger): what the global-concurrency peak counts. */
  note?: (entry: RunEntry) => void;
}

export const CHAOS_HANDLER = Symbol.for('loom.chaos.handler');

/** Runs currently inside the handler in this process: what the pool really has at work. */
let running = 0;

/** The name of the chaos job limited by {@link CHAOS_GLOBAL_CONCURRENCY}. */
export const LIMITED_NAME = 'chaos-limited';

/**
 * `globalConcurrency` of {@link ChaosLimited}: below every profile's workers x concurrency (8 in
 * CI, 32 in the full run), so the limit, not the pools, decides how many of them run at once.
 */
export const CHAOS_GLOBAL_CONCURRENCY = 4;

/**
 * The job every chaos worker runs. Each run appends one row to the effects log, then, in one
 * `ctx.transaction` that also completes the job, increments its key's counter in
 * {@link TX_EFFECTS} (upserted by a field with no unique index) and records itself there. However
 * often a job runs, the counter must end at exactly 1, written by the run whose completion counted.
 */
@Job({ name: 'chaos-effect', retries: 100, backoff: { type: 'fixed', delay: '10ms' }, idempotencyKey: (p: { key: string }) => p.key })
export class ChaosEffect {
  constructor(@inject(CHAOS_HANDLER) private readonly options: ChaosHandlerOptions) {}

  run(payload: { key: string }, ctx: JobContext): Promise<void> {
    return runChaosEffect('chaos-effect', this.options, payload, ctx);
  }
}

/**
 * The same run as {@link ChaosEffect} under `globalConcurrency`: at most
 * {@link CHAOS_GLOBAL_CONCURRENCY} of them run at once across all worker processes, also while
 * they are SIGKILLed and paused (checked from the ledgers by concurrency-peak.ts).
 */
@Job({
  name: LIMITED_NAME,
  globalConcurrency: CHAOS_GLOBAL_CONCURRENCY,
  retries: 100,
  backoff: { type: 'fixed', delay: '10ms' },
  idempotencyKey: (p: { key: string }) => p.key,
})
export class ChaosLimited {
  constructor(@inject(CHAOS_HANDLER) private readonly options: ChaosHandlerOptions) {}

  run(payload: { key: string }, ctx: JobContext): Promise<void> {
    return runChaosEffect(LIMITED_NAME, this.options, payload, ctx);
  }
}

/**
 * One chaos run. Its working time is noted (`run`, then `end`): the end is when the transaction's
 * callback last finished if the transaction committed (the commit releases the job's concurrency
 * slot, possibly before this function returns), otherwise when the run gave up (before the engine
 * writes the retry that releases the slot). Either way before the slot is freed.
 */
async function runChaosEffect(name: string, options: ChaosHandlerOptions, payload: { key: string }, ctx: JobContext): Promise<void> {
  const inflight = ++running;
  const { db, owner, maxDelayMs, ignoreAbort, fixedDelayMs, note } = options;
  const entry = { job: ctx.jobId, attempt: ctx.attempt, name, owner };
  note?.({ t: 'run', ...entry, at: Date.now() });
  let workedUntil: number | undefined;
  try {
    await pause(fixedDelayMs ?? Math.random() * maxDelayMs, ignoreAbort ? undefined : ctx.signal);
    const run = { jobId: ctx.jobId, attempt: ctx.attempt, owner };
    await db.collection(EFFECTS).insertOne({ key: payload.key, ...run, inflight, at: new Date() });
    let callbackEnd = 0;
    await ctx.transaction(async (session) => {
      await db
        .collection<TxEffectRow>(TX_EFFECTS)
        .updateOne({ key: payload.key }, { $inc: { n: 1 }, $push: { runs: run } }, { upsert: true, session: session as ClientSession });
      callbackEnd = Date.now();
    });
    workedUntil = callbackEnd;
  } finally {
    running--;
    note?.({ t: 'end', ...entry, at: workedUntil ?? Date.now() });
  }
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}

/**
 * A plain (not unique) index on the transactional effect's key, so the upsert need not scan the
 * collection: two rows of one key stay possible, and the oracle counts them.
 */
export async function ensureChaosIndexes(db: Db): Promise<void> {
  await db.collection(TX_EFFECTS).createIndex({ key: 1 }, { name: 'chaos_tx_effects_key' });
}
