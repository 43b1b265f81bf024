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

/** The overview, `<base>/`: totals per status, the last hour's chart, and each queue with its counts and pause control. */
export function queuesPage(ctx: PageContext, data: { queues: QueueSummary[]; series: FinishedSeries | undefined }): Html {
  const sum = totals(data.queues);
  const cards = JOB_STATUSES.map(
    (s) =>
      html`<a class="card status-card status-${s}" href="${href(ctx, '/jobs', { status: s })}"><span class="card-n">${count(sum[s])}</span><span class="card-label">${s}</span></a>`,
  );
  const chart = data.series ? throughputChart(data.series) : html`<p class="empty">This store cannot count finished jobs by time, so there is no chart.</p>`;
  const rows = data.queues.map((q) => {
    const cell = (s: JobStatus) => {
      const n = q.counts[s] ?? 0;
      return html`<td class="num">${n === 0 ? html`<span class="muted">0</span>` : html`<a href="${href(ctx, '/jobs', { status: s, queue: q.name })}">${count(n)}</a>`}</td>`;
    };
    const control = q.paused
      ? actionForm(ctx, `/actions/queues/${encodeURIComponent(q.name)}/resume`, 'Resume', { variant: 'primary', testId: 'resume-queue' })
      : actionForm(ctx, `/actions/queues/${encodeURIComponent(q.name)}/pause`, 'Pause', { testId: 'pause-queue' });
    return html`<tr data-queue="${q.name}"><td><a href="${href(ctx, '/jobs', { queue: q.name })}">${q.name}</a></td><td>${
      q.paused ? html`<span class="badge paused">paused</span>` : html`<span class="badge active">active</span>`
    }</td>${JOB_STATUSES.map(cell)}<td>${when(q.oldestQueuedAt, ctx.now)}</td><td class="actions">${control}</td></tr>`;
  });
  const body = html`<h1>Queues</h1>
${panel('totals', undefined, html`<div class="cards">${cards}</div>`, { live: true })}
${panel('throughput', 'Last hour', chart, { live: true })}
${panel('queues', 'Queues', table(['Queue', 'State', ...JOB_STATUSES, 'Oldest queued', ''], rows, 'No queue has jobs yet.'), { live: true })}`;
  return layout(ctx, { title: 'Queues', section: 'queues', body, live: { topic: { kind: 'queues' }, fingerprint: queuesFingerprint(data.queues) } });
}
