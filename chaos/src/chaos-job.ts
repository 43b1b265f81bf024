import 'reflect-metadata';
import { inject } from 'inversify';
import type { Db } from 'mongodb';
import { Job, type JobContext } from '@loom/core';

/** The collections the chaos handler writes to. */
export const SINK = 'chaos_sink';
export const EFFECTS = 'chaos_effects';

/** How the handler behaves in this process (bound in the container as {@link CHAOS_HANDLER}). */
export interface ChaosHandlerOptions {
  db: Db;
  owner: string;
  /** Each run waits a random time up to this before writing, so runs overlap kills and pauses. */
  maxDelayMs: number;
  /** Keep running after ctx.signal aborts (a handler that ignores shutdown). */
  ignoreAbort: boolean;
}

export const CHAOS_HANDLER = Symbol.for('loom.chaos.handler');

/** Runs currently inside the handler in this process: what the pool really has at work. */
let running = 0;

const E11000 = 11000;

/**
 * The job every chaos worker runs. Each run appends one row to the effects log (so re-executions
 * can be counted) and then writes the job's key into the sink, whose unique index on `key` makes
 * the effect idempotent: however often a job runs, the sink must end with one row per key.
 */
@Job({ name: 'chaos-effect', retries: 100, backoff: { type: 'fixed', delay: '10ms' }, idempotencyKey: (p: { key: string }) => p.key })
export class ChaosEffect {
  constructor(@inject(CHAOS_HANDLER) private readonly options: ChaosHandlerOptions) {}

  /** Returns who ran it: stored with the completion, it names the run whose ack was accepted. */
  async run(payload: { key: string }, ctx: JobContext): Promise<{ owner: string; attempt: number }> {
    const inflight = ++running;
    try {
      const { db, owner, maxDelayMs, ignoreAbort } = this.options;
      await pause(Math.random() * maxDelayMs, ignoreAbort ? undefined : ctx.signal);
      await db.collection(EFFECTS).insertOne({ key: payload.key, jobId: ctx.jobId, attempt: ctx.attempt, owner, inflight, at: new Date() });
      try {
        await db.collection(SINK).insertOne({ key: payload.key, jobId: ctx.jobId, owner });
      } catch (err) {
        if ((err as { code?: number }).code !== E11000) throw err;
      }
      return { owner, attempt: ctx.attempt };
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

/** The sink's unique index: the idempotency of the effect rests on it. */
export async function ensureSinkIndex(db: Db): Promise<void> {
  await db.collection(SINK).createIndex({ key: 1 }, { unique: true, name: 'chaos_sink_key' });
}
