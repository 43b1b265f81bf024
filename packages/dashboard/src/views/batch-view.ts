import type { BatchRecord } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { count, short, when } from '../html/format.js';
import { FAILURES_SHOWN, type BatchView } from '../flow-reads.js';
import { jobStatusBadge, panel, table } from './components.js';
import { layout } from './layout.js';
import { href, jobPath, type PageContext } from './page-context.js';

/** `/batches/<id>`, the id encoded as one path segment. */
export function batchPath(id: string): string {
  return `/batches/${encodeURIComponent(id)}`;
}

/** How far a batch is: a bar of its ended members and "N of M ended". */
export function batchProgress(batch: BatchRecord): Html {
  const ended = batch.total - batch.pending;
  const pct = batch.total === 0 ? 100 : (ended / batch.total) * 100;
  return html`<progress max="100" value="${pct.toFixed(0)}" aria-label="${ended} of ${batch.total} members ended"></progress> <span class="num">${count(ended)} of ${count(batch.total)} ended</span>`;
}

function fact(label: string, value: Html | string): Html {
  return html`<dt>${label}</dt><dd>${value}</dd>`;
}

/**
 * `<base>/batches/<id>`: a batch's progress (its counts, from the store's counters), its first
 * failed members and the callbacks its end enqueued. It never lists the other members (a batch
 * may have 100,000).
 */
export function batchPage(ctx: PageContext, data: BatchView): Html {
  const { batch } = data;
  const facts = html`<dl class="facts" data-test="batch-facts">
${fact('Progress', batchProgress(batch))}
${fact('Total', html`<span class="num" data-count="total">${count(batch.total)}</span>`)}
${fact('Completed', html`<span class="num" data-count="completed">${count(batch.completed)}</span>`)}
${fact('Dead', html`<span class="num" data-count="dead">${count(batch.dead)}</span>`)}
${fact('Cancelled', html`<span class="num" data-count="cancelled">${count(batch.cancelled)}</span>`)}
${fact('Pending', html`<span class="num" data-count="pending">${count(batch.pending)}</span>`)}
${fact('Created', when(batch.createdAt, ctx.now))}
${fact('Finished', batch.finishedAt ? when(batch.finishedAt, ctx.now) : html`<span class="muted">not yet: ${count(batch.pending)} pending</span>`)}
</dl>`;
  const failedRows = data.failed.map((id) => html`<li><a class="mono" href="${href(ctx, jobPath(id))}">${id}</a></li>`);
  const failedTitle =
    data.failedCount > data.failed.length ? `Failed members (first ${FAILURES_SHOWN} of ${count(data.failedCount)})` : `Failed members (${data.failedCount})`;
  const callbackRows = data.callbacks.map(
    (c) =>
      html`<tr data-callback="${c.on}" data-job="${c.job.id}"><td>on ${c.on}: <a href="${href(ctx, jobPath(c.job.id))}">${c.job.name}</a><div class="mono sub">${short(c.job.id, 26)}</div></td><td>${jobStatusBadge(c.job, ctx.now)}</td></tr>`,
  );
  const body = html`<p class="crumbs">Batches</p>
<h1>Batch <span class="mono id">${batch.id}</span></h1>
${panel('batch-summary', undefined, facts)}
${panel(
  'batch-failed',
  failedTitle,
  failedRows.length ? html`<ul class="id-list">${failedRows}</ul>` : html`<p class="empty">No member died or was cancelled.</p>`,
)}
${panel(
  'batch-callbacks',
  `Callbacks (${data.callbacks.length})`,
  table(
    ['Callback', 'Status'],
    callbackRows,
    batch.finishedAt ? 'No callback: the batch was created without one.' : 'None yet: callbacks are enqueued when every member has ended.',
  ),
)}`;
  return layout(ctx, { title: `Batch ${batch.id}`, section: 'jobs', body });
}
