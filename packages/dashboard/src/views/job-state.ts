import type { JobRecord, JobSummary } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { when } from '../html/format.js';
import { href, jobPath, type PageContext } from './page-context.js';

/** What the store's `heldBy` means, as a list cell says it. */
const HELD_SHORT: Record<NonNullable<JobSummary['heldBy']>, string> = {
  paused: 'held: queue paused',
  rateLimit: 'held by rate limit',
  globalConcurrency: 'held by global concurrency',
  group: 'held by group concurrency',
};

/**
 * Why a listed job is not running, from what a summary holds: what the store says holds it back
 * (`heldBy`), a durable sleep (`sleepUntil` after now), a delay, or a wait. Undefined when the
 * status says it all.
 */
export function summaryState(job: JobSummary, now: Date): Html | undefined {
  if (job.status === 'waiting') return html`waiting for a signal, a child job or its dependencies`;
  if (job.status !== 'queued') return undefined;
  if (job.heldBy) return html`${HELD_SHORT[job.heldBy]}`;
  if (job.sleepUntil !== undefined && job.sleepUntil > now) return html`sleeping, wakes ${when(job.sleepUntil, now)}`;
  return undefined;
}

/**
 * Why this job is not running, from its full record and the store's `heldBy` (undefined when
 * nothing holds it or the store does not know): held by a pause or a flow limit, asleep in a
 * step, waiting for a signal, for child jobs or for its dependencies (how many are unmet), due later (delay or backoff), or due now.
 */
export function recordState(ctx: PageContext, job: JobRecord, heldBy: JobSummary['heldBy']): Html | undefined {
  const { now } = ctx;
  if (job.status === 'waiting') {
    const parts: Html[] = [];
    if (job.waitingFor?.signal !== undefined) parts.push(html`signal "${job.waitingFor.signal}"`);
    const children = job.waitingFor?.jobs ?? [];
    if (children.length > 0) {
      const links = children.slice(0, 5).map((id, i) => html`${i > 0 ? ', ' : ''}<a class="mono" href="${href(ctx, jobPath(id))}">${id}</a>`);
      parts.push(html`${children.length === 1 ? 'job' : `${children.length} jobs`} ${links}${children.length > 5 ? ', …' : ''}`);
    }
    const unmet = job.waitingFor?.dependencies ?? [];
    if (unmet.length > 0) {
      const of = job.dependsOn?.length ?? unmet.length;
      parts.push(html`${unmet.length === 1 ? '1 dependency' : `${unmet.length} dependencies`} to complete (${unmet.length} of ${of} unmet)`);
    }
    return parts.length > 0 ? html`waiting for ${parts.map((p, i) => html`${i > 0 ? ' and ' : ''}${p}`)}` : html`waiting`;
  }
  if (job.status !== 'queued') return undefined;
  if (heldBy === 'paused') return html`held: queue ${job.queue} is paused`;
  if (heldBy === 'rateLimit') return html`held by the rate limit of ${job.name}`;
  if (heldBy === 'globalConcurrency') return html`held by the global concurrency limit of ${job.name}`;
  if (heldBy === 'group') return html`held by the group concurrency limit of its group key`;
  if (job.runAt <= now) return html`due: the next engine with a free slot takes it`;
  const sleep = job.steps.find((s) => s.kind === 'sleep' && s.status === 'pending' && !s.error && s.wakeAt && s.wakeAt > now);
  if (sleep) return html`sleeping in "${sleep.name}", wakes ${when(sleep.wakeAt, now)}`;
  if (job.attempt > 0 && job.errors.length > 0) return html`attempt ${job.attempt} failed; the next one runs ${when(job.runAt, now)}`;
  return html`delayed, runs ${when(job.runAt, now)}`;
}
