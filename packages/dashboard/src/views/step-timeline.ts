import type { JobRecord, StepRecord } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { duration, json, utc, when } from '../html/format.js';
import type { PageContext } from './page-context.js';

const WIDTH = 960;
const ROW = 22;
const LABEL = 180;
const PLOT = WIDTH - LABEL - 8;
/** The narrowest bar, in drawing units (of {@link WIDTH}): a 20 ms step beside a 30-minute sleep stays visible. */
const MIN_BAR = 30;

/**
 * Where a step is, as the page says it. A `pending` record means three different things: a step
 * that threw (it carries its error; the next attempt runs it again, or the job died on it), a
 * sleep or wait in progress (the job is still active), or one the job never came back to (it
 * was cancelled or died while asleep).
 */
export type StepState = 'completed' | 'failed' | 'sleeping' | 'waiting' | 'interrupted';

const FINISHED = new Set(['completed', 'dead', 'cancelled']);

export function stepState(step: StepRecord, job: Pick<JobRecord, 'status'>): StepState {
  if (step.status === 'completed') return 'completed';
  if (step.error) return 'failed';
  if (FINISHED.has(job.status)) return 'interrupted';
  return step.kind === 'sleep' ? 'sleeping' : 'waiting';
}

const BADGE: Record<StepState, string> = {
  completed: 'status-completed',
  failed: 'status-dead',
  sleeping: 'status-waiting',
  waiting: 'status-waiting',
  interrupted: 'status-cancelled',
};

/** Steps in the order the run reached them (`seq`), those without one in stored order. */
function ordered(steps: readonly StepRecord[]): StepRecord[] {
  return steps
    .map((step, i) => ({ step, key: step.seq ?? Number.MAX_SAFE_INTEGER, i }))
    .sort((a, b) => a.key - b.key || a.i - b.i)
    .map((e) => e.step);
}

/**
 * Widths for slots of these durations that fill `total`: proportional to the durations, but none
 * under `min` (the long ones give up what the short ones need). Without the floor, a 30-minute
 * sleep left the steps around it a fraction of a pixel.
 */
export function slotWidths(durations: readonly number[], total: number, min: number): number[] {
  const floor = Math.min(min, total / Math.max(1, durations.length) / 2);
  const fixed = new Set<number>();
  for (;;) {
    const room = total - fixed.size * floor;
    const free = durations.map((d, i) => (fixed.has(i) ? 0 : Math.max(0, d)));
    const sum = free.reduce((a, b) => a + b, 0);
    const share = (i: number) => (sum > 0 ? (free[i]! / sum) * room : room / (durations.length - fixed.size));
    const under = durations.findIndex((_, i) => !fixed.has(i) && share(i) < floor);
    if (under < 0) return durations.map((_, i) => (fixed.has(i) ? floor : share(i)));
    fixed.add(under);
  }
}

/**
 * A job's steps as a timeline: one bar per step, side by side in the order the run reached them,
 * each from the previous step's record (or the run's start) to its own, so a bar is how long the
 * run took to get there; a sleep or wait in progress runs on to its wake time (or now). Bar widths
 * follow the durations but none is narrower than {@link MIN_BAR}, so the axis is not to scale when
 * steps of milliseconds sit beside long sleeps (the table below has every duration). Below it, the
 * table with each step's kind, state, time, duration and result.
 */
export function stepTimeline(ctx: PageContext, job: JobRecord): Html {
  const steps = ordered(job.steps);
  if (steps.length === 0) return html`<p class="empty">This job recorded no steps.</p>`;
  const now = ctx.now.getTime();
  const start = job.startedAt ?? job.createdAt;
  const spans = steps.map((step, i) => {
    const from = (i === 0 ? start : steps[i - 1]!.at).getTime();
    const state = stepState(step, job);
    const at = step.at.getTime();
    // In progress: it has lasted since it began (`at`) and runs on to its wake time, if any.
    const to =
      state === 'sleeping' || state === 'waiting'
        ? Math.max(at, step.wakeAt?.getTime() ?? now, now)
        : state === 'interrupted'
          ? Math.max(at, job.finishedAt?.getTime() ?? at)
          : at;
    const took = state === 'sleeping' || state === 'waiting' ? now - at : at - from;
    return { step, state, from, to, took };
  });
  const durations = spans.map((s) => Math.max(0, s.to - s.from));
  const total = durations.reduce((a, b) => a + b, 0);
  const widths = slotWidths(durations, PLOT, MIN_BAR);
  const proportional = total > 0 && durations.every((d, i) => Math.abs((d / total) * PLOT - widths[i]!) < 0.5);
  const height = steps.length * ROW + 22;
  let x = LABEL;
  const bars = spans.map(({ step, state, took }, i) => {
    const y = i * ROW + 4;
    const w = widths[i]!;
    const bar = html`<g><title>${step.name} (${step.kind}, ${state}): ${duration(took)}${
      state === 'sleeping' || state === 'waiting' ? ' so far' : ''
    }</title><text class="tick" x="${LABEL - 8}" y="${y + 13}" text-anchor="end">${
      step.name.length > 26 ? `${step.name.slice(0, 25)}…` : step.name
    }</text><rect class="step-bar step-${step.kind} step-${state}${step.status === 'pending' ? ' step-pending' : ''}" data-step="${step.name}" x="${x.toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${ROW - 8}" rx="3"></rect></g>`;
    x += w;
    return bar;
  });
  const svg = html`<svg class="timeline" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="Steps timeline over ${duration(total)}${
    proportional ? '' : ', not to scale'
  }">
<line class="axis" x1="${LABEL}" y1="${height - 18}" x2="${WIDTH - 8}" y2="${height - 18}"></line>
<text class="tick" x="${LABEL}" y="${height - 4}">${utc(new Date(spans[0]!.from)).slice(11)}</text>
${proportional ? '' : html`<text class="tick" x="${LABEL + PLOT / 2}" y="${height - 4}" text-anchor="middle">not to scale: short steps widened</text>`}
<text class="tick" x="${WIDTH - 8}" y="${height - 4}" text-anchor="end">+${duration(total)}</text>
${bars}
</svg>`;
  const rows = spans.map(({ step, state, took }) => {
    const inProgress = state === 'sleeping' || state === 'waiting';
    return html`<tr data-step="${step.name}">
<td>${step.name}</td><td>${step.kind}</td><td><span class="badge ${BADGE[state]}">${state}</span></td>
<td>${when(step.at, ctx.now)}</td><td class="num">${duration(took)}${inProgress ? ' so far' : ''}</td>
<td>${inProgress && step.wakeAt ? when(step.wakeAt, ctx.now) : ''}</td>
<td>${
      step.error
        ? html`<details><summary class="error-text">${step.error.name}: ${step.error.message}</summary><pre>${step.error.stack ?? ''}</pre></details>`
        : step.result !== undefined
          ? html`<details><summary>result</summary><pre>${json(step.result)}</pre></details>`
          : ''
    }</td></tr>`;
  });
  return html`${svg}<div class="table-wrap" tabindex="0"><table><thead><tr><th>Step</th><th>Kind</th><th>State</th><th>Recorded</th><th>Took</th><th>Wakes</th><th>Result</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}
