import { JOB_STATUSES, type JobPage, type JobStatus, type JobSummary, type QueueSummary } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { bytes, count, short, when } from '../html/format.js';
import { queuesFingerprint } from '../live/fingerprints.js';
import { actionForm, jobStatusBadge, panel, table } from './components.js';
import { layout } from './layout.js';
import { href, jobPath, type PageContext } from './page-context.js';
import { summaryState } from './job-state.js';
import { totals } from './queues-view.js';
import { bulkBar } from './bulk-view.js';

/** The filters of `<base>/jobs`, as read from its query string. */
export interface JobsFilter {
  /** Absent: every status. */
  statuses?: JobStatus[];
  name?: string;
  queue?: string;
  /** An idempotency key. */
  key?: string;
  /** The payload box as typed (`orderId=o1 tier="gold"`), and what it parsed to. */
  payload?: string;
  payloadMatch?: Record<string, string | number | boolean | null>;
  cursor?: string;
}

/** Whether the list shows exactly the dead letters (it then offers retry-all and purge). */
export function isDeadLetterView(filter: JobsFilter): boolean {
  return filter.statuses?.length === 1 && filter.statuses[0] === 'dead';
}

function progressCell(progress: unknown): Html {
  if (progress === undefined) return html``;
  if (typeof progress === 'number' && Number.isFinite(progress)) {
    const pct = progress <= 1 ? progress * 100 : progress;
    if (pct >= 0 && pct <= 100) return html`<progress max="100" value="${pct.toFixed(0)}" title="${pct.toFixed(0)}%"></progress>`;
  }
  return html`<span class="mono">${short(JSON.stringify(progress) ?? '', 40)}</span>`;
}

/** The sizes of a payload and result the store keeps outside the job's record (a list never loads them). */
function sizes(job: JobSummary): Html | '' {
  const parts = [
    ...(job.payloadSize === undefined ? [] : [`payload ${bytes(job.payloadSize)}`]),
    ...(job.resultSize === undefined ? [] : [`result ${bytes(job.resultSize)}`]),
  ];
  // One line each: a phone-wide table cuts long cells.
  return parts.length === 0 ? '' : html`${parts.map((part) => html`<div class="sub" data-test="value-size">${part}</div>`)}`;
}

function stateLine(job: JobSummary, now: Date): Html | '' {
  const state = summaryState(job, now);
  return state ? html`<div class="state" data-test="state">${state}</div>` : '';
}

function row(ctx: PageContext, job: JobSummary, dead: boolean): Html {
  const retry =
    job.status === 'dead' || job.status === 'cancelled'
      ? actionForm(ctx, `/actions${jobPath(job.id)}/retry`, 'Retry', { variant: 'primary', fields: { back: ctx.here }, testId: 'retry-job' })
      : '';
  const select = ctx.canAct
    ? html`<td class="select"><input type="checkbox" name="id" value="${job.id}" form="bulk" data-select aria-label="Select job ${job.id}"></td>`
    : '';
  return html`<tr data-job="${job.id}">${select}
<td class="mono"><a href="${href(ctx, jobPath(job.id))}">${short(job.id, 26)}</a></td>
<td>${job.name}${sizes(job)}</td>
<td>${job.queue}</td>
<td>${jobStatusBadge(job, ctx.now)}${job.cancelRequestedAt ? html` <span class="badge cancelling">cancelling</span>` : ''}${stateLine(job, ctx.now)}</td>
<td class="num">${job.attempt}/${job.maxAttempts}</td>
<td>${when(job.createdAt, ctx.now)}</td>
<td>${job.finishedAt ? when(job.finishedAt, ctx.now) : job.status === 'queued' && job.runAt > ctx.now ? html`runs ${when(job.runAt, ctx.now)}` : ''}</td>
<td class="wrap">${dead ? html`<span class="reason">${short(job.deadReason ?? '', 100)}</span>` : progressCell(job.progress)}</td>
<td class="actions">${retry}</td>
</tr>`;
}

/** How many jobs of `counted` (per status) have one of `statuses` (all when absent). */
function matchingCount(counted: Record<JobStatus, number>, statuses: JobStatus[] | undefined): number {
  return (statuses ?? JOB_STATUSES).reduce((n, s) => n + counted[s], 0);
}

/**
 * `<base>/jobs?status=…&name=…&queue=…`: jobs newest first in keyset pages (each page one index
 * range of the store, whatever the number of jobs). With `status=dead` it is the dead-letter page:
 * retry all matching, purge matching (after a confirmation page).
 */
export function jobsPage(ctx: PageContext, data: { filter: JobsFilter; page: JobPage; queues: QueueSummary[] }): Html {
  const { filter, page } = data;
  const dead = isDeadLetterView(filter);
  const keep = { name: filter.name, queue: filter.queue, key: filter.key, payload: filter.payload };
  const narrowed = filter.name !== undefined || filter.queue !== undefined || filter.key !== undefined || filter.payload !== undefined;
  const counted =
    filter.name === undefined && filter.key === undefined && filter.payload === undefined
      ? totals(filter.queue === undefined ? data.queues : data.queues.filter((q) => q.name === filter.queue))
      : undefined;
  const selected = (s: JobStatus | undefined) => (s === undefined ? filter.statuses === undefined : filter.statuses?.length === 1 && filter.statuses[0] === s);
  const tab = (s: JobStatus | undefined) =>
    html`<a class="tab${selected(s) ? ' active' : ''}" href="${href(ctx, '/jobs', { ...keep, status: s })}">${s ?? 'all'}${
      counted ? html` <span class="tab-n">${count(s === undefined ? Object.values(counted).reduce((a, b) => a + b, 0) : counted[s])}</span>` : ''
    }</a>`;
  const tabs = html`<nav class="tabs" aria-label="Status">${tab(undefined)}${JOB_STATUSES.map(tab)}</nav>`;
  const statusFields = (filter.statuses ?? []).map((s) => html`<input type="hidden" name="status" value="${s}">`);
  const filterForm = html`<form class="filters" method="get" action="${href(ctx, '/jobs')}">${statusFields}
<label>Name <input name="name" value="${filter.name ?? ''}" placeholder="any job name" autocomplete="off"></label>
<label>Queue <input name="queue" value="${filter.queue ?? ''}" placeholder="any queue" list="queue-names" autocomplete="off"></label>
<datalist id="queue-names">${data.queues.map((q) => html`<option value="${q.name}"></option>`)}</datalist>
<label>Key <input name="key" value="${filter.key ?? ''}" placeholder="idempotency key" autocomplete="off"></label>
<label class="wide">Payload <input name="payload" value="${filter.payload ?? ''}" placeholder="orderId=o1 tier=&quot;gold plan&quot;" autocomplete="off" data-test="payload-search"></label>
<button type="submit" class="btn plain">Filter</button>
${narrowed ? html`<a class="btn link" href="${href(ctx, '/jobs', { status: filter.statuses })}">Clear</a>` : ''}
</form>`;
  const jump = html`<form class="filters jump" method="get" action="${href(ctx, '/jobs')}" role="search">
<label>Job id <input name="id" placeholder="jump to a job by id" autocomplete="off" data-test="jump-id"></label>
<button type="submit" class="btn plain">Go</button>
</form>`;
  const deadTools =
    // Retry-all and purge select by name and queue only: hidden while a key or payload narrows the list.
    dead && ctx.canAct && page.jobs.length > 0 && filter.key === undefined && filter.payload === undefined
      ? html`<div class="toolbar">${actionForm(ctx, '/actions/dead-letters/retry', filter.name || filter.queue ? 'Retry all matching' : 'Retry all', {
          variant: 'primary',
          fields: { name: filter.name, queue: filter.queue },
          testId: 'retry-all',
        })}<a class="btn danger" data-test="purge" href="${href(ctx, '/dead-letters/purge', { name: filter.name, queue: filter.queue })}">Purge${filter.name || filter.queue ? ' matching' : ' all'}…</a></div>`
      : '';
  const rows = page.jobs.map((job) => row(ctx, job, dead));
  const pager = html`<div class="pager">${
    filter.cursor ? html`<a class="btn plain" href="${href(ctx, '/jobs', { ...keep, status: filter.statuses })}">⇤ First page</a>` : ''
  }${page.next ? html`<a class="btn plain" rel="next" data-test="next-page" href="${href(ctx, '/jobs', { ...keep, status: filter.statuses, cursor: page.next })}">Next page →</a>` : ''}</div>`;
  const title = dead ? 'Dead letters' : 'Jobs';
  const selectAll = html`<input type="checkbox" data-select-all aria-label="Select all jobs on this page" data-test="select-all">`;
  const headers = [
    ...(ctx.canAct ? [selectAll] : []),
    'Id',
    'Name',
    'Queue',
    'Status',
    'Attempt',
    'Created',
    dead ? 'Died' : 'Finished',
    dead ? 'Reason' : 'Progress',
    '',
  ];
  const empty = dead ? 'No dead letters match.' : filter.cursor ? 'No more jobs.' : 'No jobs match.';
  const body = html`<h1>${title}</h1>
${panel('tabs', undefined, tabs, { live: true })}
${jump}
${filterForm}
${bulkBar(ctx, { filter: { ...keep, statuses: filter.statuses }, rows: rows.length, ...(counted ? { matching: matchingCount(counted, filter.statuses) } : {}) })}
${panel('job-list', undefined, html`${deadTools}${table(headers, rows, empty)}${pager}`, { live: true })}`;
  return layout(ctx, { title, section: dead ? 'dead' : 'jobs', body, live: { topic: { kind: 'queues' }, fingerprint: queuesFingerprint(data.queues) } });
}
