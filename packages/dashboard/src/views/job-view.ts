import type { JobRecord, JobSummary } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { bytes, json, short, when } from '../html/format.js';
import { jobFingerprint } from '../live/fingerprints.js';
import { actionForm, jobStatusBadge, panel, table } from './components.js';
import { layout } from './layout.js';
import { href, jobPath, type PageContext } from './page-context.js';
import { recordState } from './job-state.js';
import { stepTimeline } from './step-timeline.js';
import { jobLogsPanel } from './job-logs-view.js';
import { RELATIONS_SHOWN, type JobRelations, type RelatedJob } from '../flow-reads.js';
import { batchPath, batchProgress } from './batch-view.js';

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

/** `<base>/jobs/<id>/payload.json` or `result.json`: the value as a JSON download. */
export function valuePath(id: string, kind: 'payload' | 'result'): string {
  return `${jobPath(id)}/${kind}.json`;
}

/**
 * The payload or result panel. A value the store keeps outside the job's record (over its
 * `offloadThreshold`) says its size and links its download; what the page shows of it is cut (see `json`).
 */
function valuePanel(ctx: PageContext, job: JobRecord, kind: 'payload' | 'result'): Html {
  const offloaded = kind === 'payload' ? job.offloadedPayload : job.offloadedResult;
  const value = kind === 'payload' ? job.payload : job.result;
  const title = kind === 'payload' ? 'Payload' : 'Result';
  // A job enqueued without a payload has none: say so rather than print "undefined".
  if (value === undefined && !offloaded) return panel(`job-${kind}`, title, html`<p class="muted" data-test="${kind}-none">No ${kind}.</p>`);
  // A long value scrolls inside its box: focusable, so a keyboard can scroll it too.
  const shown = html`<pre class="value" data-test="${kind}" tabindex="0">${json(value)}</pre>`;
  if (!offloaded) return panel(`job-${kind}`, title, shown);
  const note = html`<p class="lead" data-test="${kind}-offloaded">${bytes(offloaded.size)}, kept outside the job's record (the store's payload bucket). <a class="btn plain" data-test="${kind}-download" href="${href(ctx, valuePath(job.id, kind))}" download>Download JSON</a></p>`;
  return panel(`job-${kind}`, `${title} (${bytes(offloaded.size)})`, html`${note}${shown}`);
}

/** What a dependency's row says of it: still awaited, met, or failed (and what that does to this job). */
function dependencyState(job: JobRecord, dep: RelatedJob): Html {
  const unmet = job.status === 'waiting' && (job.waitingFor?.dependencies ?? []).includes(dep.id);
  if (dep.job?.status === 'dead' || dep.job?.status === 'cancelled') {
    const policy = job.onDependencyFailure ?? 'fail';
    return html`<span class="error-text">failed</span> <span class="muted">(on failure: ${policy})</span>`;
  }
  if (unmet) return html`<span class="badge status-waiting">unmet</span>`;
  return html`<span class="muted">met</span>`;
}

/** A related job as one row: its name (linked) over its id, then its status badge and `extra`. */
function relatedRow(ctx: PageContext, r: RelatedJob, extra?: Html): Html {
  const link = html`<a href="${href(ctx, jobPath(r.id))}">${r.job ? r.job.name : 'removed job'}</a><div class="mono sub">${short(r.id, 26)}</div>`;
  const status = r.job ? jobStatusBadge(r.job, ctx.now) : html`<span class="muted">removed</span>`;
  return html`<tr data-job="${r.id}"><td>${link}</td><td>${status}${extra === undefined ? '' : html` ${extra}`}</td></tr>`;
}

/** The "Depends on" and "Dependents" panels and the batch facts, for a job that has them. */
function relationPanels(ctx: PageContext, job: JobRecord, relations: JobRelations | undefined): Html {
  if (!relations) return html``;
  const parts: Html[] = [];
  const all = job.dependsOn ?? [];
  if (all.length > 0) {
    const unmet = job.status === 'waiting' ? (job.waitingFor?.dependencies ?? []).length : 0;
    const policy = job.onDependencyFailure ?? 'fail';
    const shown = all.length > relations.dependsOn.length ? `first ${relations.dependsOn.length} of ${all.length}` : `${all.length}`;
    const title = `Depends on (${shown}${unmet > 0 ? `, ${unmet} unmet` : ''})`;
    const rows = relations.dependsOn.map((r) => relatedRow(ctx, r, dependencyState(job, r)));
    parts.push(
      panel(
        'job-depends-on',
        title,
        html`<p class="lead" data-test="dependency-policy">If one dies or is cancelled: ${policy === 'fail' ? 'this job is dead-lettered (DEPENDENCY_FAILED)' : policy === 'cancel' ? 'this job is cancelled' : 'this job runs anyway'} (onDependencyFailure: ${policy}).</p>${table(['Job', 'Status'], rows, 'No dependency.')}`,
      ),
    );
  }
  const dependents = job.dependents ?? [];
  if (dependents.length > 0) {
    const title = dependents.length > RELATIONS_SHOWN ? `Dependents (newest ${RELATIONS_SHOWN} of ${dependents.length})` : `Dependents (${dependents.length})`;
    parts.push(
      panel(
        'job-dependents',
        title,
        table(
          ['Job', 'Status'],
          relations.dependents.map((r) => relatedRow(ctx, r)),
          'No dependent.',
        ),
      ),
    );
  }
  return html`${parts}`;
}

/** The job's batch (a member's, or the one whose end enqueued this callback) as facts. */
function batchFacts(ctx: PageContext, job: JobRecord, relations: JobRelations | undefined): Html {
  const batchId = job.batchId ?? job.batchCallback?.batchId;
  if (batchId === undefined) return html``;
  const link = html`<a class="mono" data-test="batch" href="${href(ctx, batchPath(batchId))}">${batchId}</a>`;
  const batch = relations?.batch;
  const progress = batch
    ? html` <span class="batch-progress">${batchProgress(batch)}</span>`
    : batch === null
      ? html` <span class="muted">(removed)</span>`
      : '';
  if (job.batchCallback) return fact('Callback of', html`batch ${link} (on ${job.batchCallback.on})${progress}`);
  return fact('Batch', html`${link}${progress}`);
}

function actions(ctx: PageContext, job: JobRecord): Html {
  const path = `/actions${jobPath(job.id)}`;
  const finished = job.status === 'completed' || job.status === 'dead' || job.status === 'cancelled';
  return html`<div class="toolbar">${
    job.status === 'dead' || job.status === 'cancelled' ? actionForm(ctx, `${path}/retry`, 'Retry', { variant: 'primary', testId: 'retry-job' }) : ''
  }${
    !finished && !job.cancelRequestedAt
      ? actionForm(ctx, `${path}/cancel`, 'Cancel', {
          variant: 'danger',
          confirm: 'Cancel this job?',
          testId: 'cancel-job',
          extra: html`<label class="check"><input type="checkbox" name="children" value="1" data-keep data-test="cancel-children"> also cancel its children and dependents</label>`,
        })
      : ''
  }${finished ? actionForm(ctx, `${path}/remove`, 'Remove', { variant: 'danger', confirm: 'Delete this job for good?', testId: 'remove-job' }) : ''}</div>`;
}

/**
 * `<base>/jobs/<id>`: everything stored about one job. Payload, result, progress, errors and step
 * names come from jobs and are shown as text (escaped), never as markup. `above` and `below` are
 * panels outside the live part (forms a live update must not wipe: wait tokens, fork).
 */
export function jobPage(
  ctx: PageContext,
  data: { job: JobRecord; children: JobRecord[]; relations?: JobRelations; heldBy?: JobSummary['heldBy']; above?: Html; below?: Html },
): Html {
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
${batchFacts(ctx, job, data.relations)}
${job.lease && job.status === 'running' ? fact('Lease', html`${job.lease.owner}, until ${when(job.lease.until, ctx.now)}`) : ''}
${job.waitingFor && (job.waitingFor.signal !== undefined || job.waitingFor.jobs !== undefined) ? fact('Waiting for', json(job.waitingFor)) : ''}
${fact('Dead reason', job.deadReason === undefined ? undefined : html`<span class="error-text">${job.deadReason}</span>`)}
${fact('Cancel reason', job.cancelReason)}
${fact('Payload size', job.offloadedPayload === undefined ? undefined : html`<span data-test="payload-size">${bytes(job.offloadedPayload.size)}</span>`)}
${fact('Result size', job.offloadedResult === undefined ? undefined : html`<span data-test="result-size">${bytes(job.offloadedResult.size)}</span>`)}
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
${relationPanels(ctx, job, data.relations)}
${panel('job-progress', 'Progress', progressView(job.progress))}
${valuePanel(ctx, job, 'payload')}
${job.result !== undefined || job.offloadedResult !== undefined ? valuePanel(ctx, job, 'result') : ''}
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
