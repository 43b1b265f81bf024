import { JOB_STATUSES, type JobStatus, type QueueSummary } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { count, when } from '../html/format.js';
import { queuesFingerprint } from '../live/fingerprints.js';
import type { FinishedSeries } from '../finished-series.js';
import { actionForm, panel, table } from './components.js';
import { layout } from './layout.js';
import { href, type PageContext } from './page-context.js';
import { throughputChart } from './throughput-chart.js';

/** Counts per status over every queue. */
export function totals(queues: readonly QueueSummary[]): Record<JobStatus, number> {
  const sum = Object.fromEntries(JOB_STATUSES.map((s) => [s, 0])) as Record<JobStatus, number>;
  for (const q of queues) for (const s of JOB_STATUSES) sum[s] += q.counts[s] ?? 0;
  return sum;
}

/**
 * Counts as the overview shows them: a job asleep in a workflow is stored `queued` but waits for a
 * time, not for a worker, so it counts under `waiting` here (and no longer under `queued`).
 */
export function overviewCounts(q: Pick<QueueSummary, 'counts' | 'sleeping'>): Record<JobStatus, number> {
  const sleeping = q.sleeping ?? 0;
  return { ...q.counts, queued: q.counts.queued - sleeping, waiting: q.counts.waiting + sleeping };
}

/** The overview, `<base>/`: totals per status, the last hour's chart, and each queue with its counts and pause control. */
export function queuesPage(ctx: PageContext, data: { queues: QueueSummary[]; series: FinishedSeries | undefined }): Html {
  const sum = totals(data.queues.map((q) => ({ ...q, counts: overviewCounts(q) })));
  const asleep = data.queues.reduce((n, q) => n + (q.sleeping ?? 0), 0);
  const cards = JOB_STATUSES.map(
    (s) =>
      html`<a class="card status-card status-${s}" href="${href(ctx, '/jobs', { status: s })}"><span class="card-n">${count(sum[s])}</span><span class="card-label">${s}</span>${
        s === 'waiting' && asleep > 0 ? html`<span class="card-note">${count(asleep)} asleep</span>` : ''
      }</a>`,
  );
  const chart = data.series ? throughputChart(data.series) : html`<p class="empty">This store cannot count finished jobs by time, so there is no chart.</p>`;
  const rows = data.queues.map((q) => {
    const shown = overviewCounts(q);
    const cell = (s: JobStatus) => {
      const n = shown[s] ?? 0;
      // Sleepers are stored queued: the waiting cell's link lists those too.
      const statuses = s === 'waiting' && (q.sleeping ?? 0) > 0 ? ['waiting', 'queued'] : [s];
      const note = s === 'waiting' && (q.sleeping ?? 0) > 0 ? html`<span class="cell-note">${count(q.sleeping!)} asleep</span>` : '';
      return html`<td class="num">${n === 0 ? html`<span class="muted">0</span>` : html`<a href="${href(ctx, '/jobs', { status: statuses, queue: q.name })}">${count(n)}</a>`}${note}</td>`;
    };
    const control = q.paused
      ? actionForm(ctx, `/actions/queues/${encodeURIComponent(q.name)}/resume`, 'Resume', { variant: 'primary', testId: 'resume-queue' })
      : actionForm(ctx, `/actions/queues/${encodeURIComponent(q.name)}/pause`, 'Pause', { testId: 'pause-queue' });
    return html`<tr data-queue="${q.name}"><td><a href="${href(ctx, '/jobs', { queue: q.name })}">${q.name}</a> <a class="cell-note" href="${href(ctx, `/queues/${encodeURIComponent(q.name)}`)}" data-test="queue-charts">charts</a></td><td>${
      q.paused ? html`<span class="badge paused">paused</span>` : html`<span class="badge active">active</span>`
    }</td>${JOB_STATUSES.map(cell)}<td>${when(q.oldestQueuedAt, ctx.now)}</td><td class="actions">${control}</td></tr>`;
  });
  const body = html`<h1>Queues</h1>
${panel('totals', undefined, html`<div class="cards">${cards}</div>`, { live: true })}
${panel('throughput', 'Last hour', chart, { live: true })}
${panel('queues', 'Queues', table(['Queue', 'State', ...JOB_STATUSES, 'Oldest queued', ''], rows, 'No queue has jobs yet.'), { live: true })}`;
  return layout(ctx, { title: 'Queues', section: 'queues', body, live: { topic: { kind: 'queues' }, fingerprint: queuesFingerprint(data.queues) } });
}
