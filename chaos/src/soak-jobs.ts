import 'reflect-metadata';
import { inject } from 'inversify';
import { Job, type JobContext } from '@loom/core';
import { CHAOS_HANDLER, EFFECTS, type ChaosHandlerOptions } from './chaos-job.js';

/**
 * The jobs a soak adds to the chaos jobs (chaos-job.ts): most of a soak's jobs are plain, so that
 * 200,000 of them fit in half an hour on a two-core machine; workflows and a cron schedule run
 * beside them so steps, sleeps, children and fires go through the same kills and step-downs.
 * Each run appends a row to the effects log (outside any transaction), as the chaos jobs do: the
 * oracle counts runs and effects of accepted runs from it.
 */

export const PLAIN_NAME = 'chaos-plain';
export const FLOW_NAME = 'chaos-flow';
/** A workflow's child, keyed `<parent key>:child` (a name of its own: the controller counts the jobs it enqueued by name). */
export const CHILD_NAME = 'chaos-child';
export const CRON_NAME = 'chaos-cron';
/** The cron schedule's effects: one row per run, by fire time. */
export const CRON_EFFECTS = 'chaos_cron_effects';

/** The key of a workflow's child job. */
export const childKey = (key: string): string => `${key}:child`;

/** Appends the run's row to the effects log. */
async function effect({ db, owner }: ChaosHandlerOptions, key: string, ctx: JobContext): Promise<void> {
  await db.collection(EFFECTS).insertOne({ key, jobId: ctx.jobId, attempt: ctx.attempt, owner, at: new Date() });
}

@Job({ name: PLAIN_NAME, retries: 100, backoff: { type: 'fixed', delay: '10ms' }, idempotencyKey: (p: { key: string }) => p.key })
export class ChaosPlain {
  constructor(@inject(CHAOS_HANDLER) private readonly options: ChaosHandlerOptions) {}

  run(payload: { key: string }, ctx: JobContext): Promise<void> {
    return effect(this.options, payload.key, ctx);
  }
}

@Job({ name: CHILD_NAME, retries: 100, backoff: { type: 'fixed', delay: '10ms' }, idempotencyKey: (p: { key: string }) => p.key })
export class ChaosChild {
  constructor(@inject(CHAOS_HANDLER) private readonly options: ChaosHandlerOptions) {}

  run(payload: { key: string }, ctx: JobContext): Promise<void> {
    return effect(this.options, payload.key, ctx);
  }
}

/**
 * A workflow: a step with an effect, a durable sleep, a child job it waits for. Kills and
 * step-downs land between its steps; it must still complete once, with its child.
 */
@Job({ name: FLOW_NAME, retries: 100, backoff: { type: 'fixed', delay: '10ms' }, idempotencyKey: (p: { key: string }) => p.key })
export class ChaosFlow {
  constructor(@inject(CHAOS_HANDLER) private readonly options: ChaosHandlerOptions) {}

  async run(payload: { key: string }, ctx: JobContext): Promise<{ child: string }> {
    await ctx.step('effect', () => effect(this.options, payload.key, ctx));
    await ctx.sleep('nap', '300ms');
    const child = await ctx.enqueue(ChaosChild, { key: childKey(payload.key) });
    await ctx.waitForJob(child.id, { timeout: '10m' });
    return { child: child.id };
  }
}

/**
 * Fires every 5 s, scheduled by every worker; each slot must be enqueued once (its fire time is its
 * key) and run, none skipped: `catchUp: 'all'` and `overlap: 'allow'` leave no slot out, also those
 * that fell in a step-down or while every scheduler was down.
 */
@Job({ name: CRON_NAME, retries: 100, backoff: { type: 'fixed', delay: '10ms' }, schedule: { cron: '*/5 * * * * *', catchUp: 'all', overlap: 'allow' } })
export class ChaosCron {
  constructor(@inject(CHAOS_HANDLER) private readonly options: ChaosHandlerOptions) {}

  async run(_payload: unknown, ctx: JobContext): Promise<void> {
    const { db, owner } = this.options;
    await db.collection(CRON_EFFECTS).insertOne({ scheduledFor: ctx.scheduledFor, jobId: ctx.jobId, attempt: ctx.attempt, owner, at: new Date() });
  }
}
