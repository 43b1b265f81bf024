import 'reflect-metadata';
import { inject } from 'inversify';
import type { ClientSession, Db } from 'mongodb';
import { Job, type JobContext } from '@loom/core';

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
}

export const CHAOS_HANDLER = Symbol.for('loom.chaos.handler');

/** Runs currently inside the handler in this process: what the pool really has at work. */
let running = 0;

/**
 * The job every chaos worker runs. Each run appends one row to the effects log, then, in one
 * `ctx.transaction` that also completes the job, increments its key's counter in
 * {@link TX_EFFECTS} (upserted by a field with no unique index) and records itself there. However
 * often a job runs, the counter must end at exactly 1, written by the run whose completion counted.
 */
@Job({ name: 'chaos-effect', retries: 100, backoff: { type: 'fixed', delay: '10ms' }, idempotencyKey: (p: { key: string }) => p.key })
export class ChaosEffect {
  constructor(@inject(CHAOS_HANDLER) private readonly options: ChaosHandlerOptions) {}

  async run(payload: { key: string }, ctx: JobContext): Promise<void> {
    const inflight = ++running;
    try {
      const { db, owner, maxDelayMs, ignoreAbort, fixedDelayMs } = this.options;
      await pause(fixedDelayMs ?? Math.random() * maxDelayMs, ignoreAbort ? undefined : ctx.signal);
      const run = { jobId: ctx.jobId, attempt: ctx.attempt, owner };
      await db.collection(EFFECTS).insertOne({ key: payload.key, ...run, inflight, at: new Date() });
      await ctx.transaction(async (session) => {
        await db
          .collection<TxEffectRow>(TX_EFFECTS)
          .updateOne({ key: payload.key }, { $inc: { n: 1 }, $push: { runs: run } }, { upsert: true, session: session as ClientSession });
      });
    } finally {
      running--;
    }
  }
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}

/**
 * A plain (not unique) index on the transactional effect's key, so the upsert need not scan the
 * collection: two rows of one key stay possible, and the oracle counts them.
 */
export async function ensureChaosIndexes(db: Db): Promise<void> {
  await db.collection(TX_EFFECTS).createIndex({ key: 1 }, { name: 'chaos_tx_effects_key' });
}
