import type { JobRecord, JobSummary } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { json, short, when } from '../html/format.js';
import { jobFingerprint } from '../live/fingerprints.js';
import { actionForm, jobStatusBadge, panel, table } from './components.js';
import { layout } from './layout.js';
import { href, jobPath, type PageContext } from './page-context.js';
import { recordState } from './job-state.js';
import { stepTimeline } from './step-timeline.js';
import { jobLogsPanel } from './job-logs-view.js';

/** How many children a job page lists. */
export const CHILDREN_SHOWN = 50;

function fact(label: string, value: unknown): Html {
  return value === undefined || value === '' ? html`` : html`<dt>${label}</dt><dd>${value}</dd>`;
}

function progressView(progress: unknown): Html {
  if (progress === undefined) return html`<p class="empty">No progress reported.</p>`;
  const pct = typeof progress === 'number' && Number.isFinite(progress) ? (progress <= 1 ? progress * 100 : progress) : undefined;
  const bar =
    pct !== undefined && pct >= 0 && pct <= 100
      ? html`<progress max="100" value="${pct.toFixed(1)}"></progress> <span class="num">${pct.toFixed(0)}%</span>`
      : '';
  return html`${bar}<pre class="value" data-test="progress">${json(progress)}</pre>`;
}

function actions(ctx: PageContext, job: JobRecord): Html {
  const path = `/actions${jobPath(job.id)}`;
  const finished = job.status === 'completed' || job.status === 'dead' || job.status === 'cancelled';
  return html`<div class="toolbar">${
    job.status === 'dead' || job.status === 'cancelled' ? actionForm(ctx, `${path}/retry`, 'Retry', { variant: 'primary', testId: 'retry-job' }) : ''
  }${
    !finished && !job.cancelRequestedAt
      ? actionForm(ctx, `${path}/cancel`, 'Cancel', { variant: 'danger', confirm: 'Cancel this job?', testId: 'cancel-job' })
      : ''
  }${finished ? actionForm(ctx, `${path}/remove`, 'Remove', { variant: 'danger', confirm: 'Delete this job for good?', testId: 'remove-job' }) : ''}</div>`;
}

/**
 * `<base>/jobs/<id>`: everything stored about one job. Payload, result, progress, errors and step
 * names come from jobs and are shown as text (escaped), never as markup. `above` and `below` are
 * panels outside the live part (forms a live update must not wipe: wait tokens, fork).
 */
export function jobPage(ctx: PageContext, data: { job: JobRecord; children: JobRecord[]; heldBy?: JobSummary['heldBy']; above?: Html; below?: Html }): Html {
  const { job } = data;
  const state = recordState(ctx, job, data.heldBy);
  const facts = html`<dl class="facts">
${fact('Status', html`${jobStatusBadge(job, ctx.now)}${job.cancelRequestedAt ? html` <span class="badge cancelling">cancel requested ${when(job.cancelRequestedAt, ctx.now)}</span>` : ''}`)}
${state ? fact('State', html`<span data-test="state">${state}</span>`) : ''}
${fact('Queue', html`<a href="${href(ctx, '/jobs', { queue: job.queue })}">${job.queue}</a>`)}
${fact('Attempt', `${job.attempt} of ${job.maxAttempts}`)}
${fact('Priority', String(job.priority))}
${fact('Created', when(job.createdAt, ctx.now))}
${fact(job.status === 'queued' ? (job.runAt <= ctx.now ? 'Due' : 'Runs') : 'Run at', when(job.runAt, ctx.now))}
${job.startedAt ? fact('Started', when(job.startedAt, ctx.now)) : ''}
${job.finishedAt ? fact(job.status === 'dead' ? 'Died' : 'Finished', when(job.finishedAt, ctx.now)) : ''}
${fact('Updated', when(job.updatedAt, ctx.now))}
${job.scheduledFor ? fact('Cron slot', when(job.scheduledFor, ctx.now)) : ''}
${fact('Idempotency key', job.idempotencyKey === undefined ? undefined : html`<span class="mono">${job.idempotencyKey}</span>`)}
${fact('Parent', job.parentId === undefined ? undefined : html`<a class="mono" data-test="parent" href="${href(ctx, jobPath(job.parentId))}">${job.parentId}</a>`)}
${job.lease && job.status === 'running' ? fact('Lease', html`${job.lease.owner}, until ${when(job.lease.until, ctx.now)}`) : ''}
${job.waitingFor ? fact('Waiting for', json(job.waitingFor)) : ''}
${fact('Dead reason', job.deadReason === undefined ? undefined : html`<span class="error-text">${job.deadReason}</span>`)}
${fact('Cancel reason', job.cancelReason)}
</dl>`;
  const errors = job.errors.map(
    (
      e,
    ) => html`<li class="attempt"><div><strong>Attempt ${e.attempt}</strong> · ${when(e.at, ctx.now)}${e.code ? html` · <span class="mono">${e.code}</span>` : ''}</div>
<div class="error-text">${e.name}: ${e.message}</div>${e.stack ? html`<details><summary>Stack</summary><pre>${e.stack}</pre></details>` : ''}</li>`,
  );
  const childRows = data.children.map(
    (c) =>
      html`<tr data-job="${c.id}"><td class="mono"><a href="${href(ctx, jobPath(c.id))}">${short(c.id, 26)}</a></td><td>${c.name}</td><td>${jobStatusBadge(c, ctx.now)}</td><td>${when(c.createdAt, ctx.now)}</td></tr>`,
  );
  const body = html`<p class="crumbs"><a href="${href(ctx, '/jobs', { queue: job.queue })}">${job.queue}</a> › <a href="${href(ctx, '/jobs', { name: job.name })}">${job.name}</a></p>
<h1>${job.name} <span class="mono id">${job.id}</span></h1>
${data.above ?? ''}
<div id="job-live" data-live>
${panel('job-summary', undefined, html`${actions(ctx, job)}${facts}`)}
${panel('job-progress', 'Progress', progressView(job.progress))}
${panel('job-payload', 'Payload', html`<pre class="value" data-test="payload">${json(job.payload)}</pre>`)}
${job.result !== undefined ? panel('job-result', 'Result', html`<pre class="value">${json(job.result)}</pre>`) : ''}
${panel('job-errors', `Attempts with errors (${job.errors.length})`, job.errors.length ? html`<ol class="attempts">${errors}</ol>` : html`<p class="empty">No failed attempt.</p>`)}
${jobLogsPanel(job)}
${panel('job-steps', `Steps (${job.steps.length})`, stepTimeline(ctx, job))}
${job.signals.length ? panel('job-signals', `Signals waiting (${job.signals.length})`, html`<pre class="value">${json(job.signals)}</pre>`) : ''}
${panel('job-children', data.children.length >= CHILDREN_SHOWN ? `Children (newest ${CHILDREN_SHOWN})` : `Children (${data.children.length})`, table(['Id', 'Name', 'Status', 'Created'], childRows, 'No child jobs.'))}
</div>
${data.below ?? ''}`;
  return layout(ctx, {
    title: `${job.name} ${job.id}`,
    section: job.status === 'dead' ? 'dead' : 'jobs',
    body,
    live: { topic: { kind: 'job', id: job.id }, fingerprint: jobFingerprint(job) },
  });
}
