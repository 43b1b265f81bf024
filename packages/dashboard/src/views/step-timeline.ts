import type { JobRecord, StepRecord } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { duration, json, utc, when } from '../html/format.js';
import { statusBadge } from './components.js';
import type { PageContext } from './page-context.js';

const WIDTH = 960;
const ROW = 22;
const LABEL = 180;

/** Steps in the order the run reached them (`seq`), those without one in stored order. */
function ordered(steps: readonly StepRecord[]): StepRecord[] {
  return steps
    .map((step, i) => ({ step, key: step.seq ?? Number.MAX_SAFE_INTEGER, i }))
    .sort((a, b) => a.key - b.key || a.i - b.i)
    .map((e) => e.step);
}

/**
 * A job's steps as a timeline: one bar per step from the previous step's record (or the run's
 * start) to its own, so each bar is how long the run took to get there; a sleep or wait still
 * pending is drawn on to its wake time. Below it, the table with each step's kind, time, duration
 * and result.
 */
export function stepTimeline(ctx: PageContext, job: JobRecord): Html {
  const steps = ordered(job.steps);
  if (steps.length === 0) return html`<p class="empty">This job recorded no steps.</p>`;
  const start = job.startedAt ?? job.createdAt;
  const spans = steps.map((step, i) => {
    const from = i === 0 ? start : steps[i - 1]!.at;
    const to = step.status === 'pending' && step.wakeAt ? step.wakeAt : step.at;
    return { step, from, to, took: step.at.getTime() - from.getTime() };
  });
  const t0 = Math.min(start.getTime(), ...spans.map((s) => s.from.getTime()));
  const t1 = Math.max(t0 + 1, ...spans.map((s) => s.to.getTime()), job.finishedAt?.getTime() ?? 0);
  const x = (t: number) => LABEL + ((t - t0) / (t1 - t0)) * (WIDTH - LABEL - 8);
  const height = steps.length * ROW + 22;
  const bars = spans.map(({ step, from, to, took }, i) => {
    const y = i * ROW + 4;
    const x0 = x(from.getTime());
    const w = Math.max(2, x(to.getTime()) - x0);
    return html`<g><title>${step.name} (${step.kind}, ${step.status}): ${duration(took)}</title><text class="tick" x="${LABEL - 8}" y="${y + 13}" text-anchor="end">${
      step.name.length > 26 ? `${step.name.slice(0, 25)}…` : step.name
    }</text><rect class="step-bar step-${step.kind} step-${step.status}" x="${x0.toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${ROW - 8}" rx="3"></rect></g>`;
  });
  const svg = html`<svg class="timeline" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="Steps timeline over ${duration(t1 - t0)}">
<line class="axis" x1="${LABEL}" y1="${height - 18}" x2="${WIDTH - 8}" y2="${height - 18}"></line>
<text class="tick" x="${LABEL}" y="${height - 4}">${utc(new Date(t0)).slice(11)}</text>
<text class="tick" x="${WIDTH - 8}" y="${height - 4}" text-anchor="end">+${duration(t1 - t0)}</text>
${bars}
</svg>`;
  const rows = spans.map(
    ({ step, took }) => html`<tr data-step="${step.name}">
<td>${step.name}</td><td>${step.kind}</td><td>${step.status === 'completed' ? statusBadge('completed') : html`<span class="badge status-waiting">pending</span>`}</td>
<td>${when(step.at, ctx.now)}</td><td class="num">${duration(took)}</td>
<td>${step.wakeAt ? when(step.wakeAt, ctx.now) : ''}</td>
<td>${
      step.error
        ? html`<details><summary class="error-text">${step.error.name}: ${step.error.message}</summary><pre>${step.error.stack ?? ''}</pre></details>`
        : step.result !== undefined
          ? html`<details><summary>result</summary><pre>${json(step.result)}</pre></details>`
          : ''
    }</td></tr>`,
  );
  return html`${svg}<div class="table-wrap"><table><thead><tr><th>Step</th><th>Kind</th><th>Status</th><th>Recorded</th><th>Took</th><th>Wakes</th><th>Result</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}
