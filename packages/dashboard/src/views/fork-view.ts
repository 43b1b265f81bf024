import type { JobRecord } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { panel } from './components.js';
import { href, jobPath, type PageContext } from './page-context.js';

/** This job's payload, cut, as the payload box's hint. */
function placeholder(payload: unknown): string {
  const text = JSON.stringify(payload) ?? '';
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}

/** `/actions/jobs/<id>/fork`. */
export function forkActionPath(jobId: string): string {
  return `/actions${jobPath(jobId)}/fork`;
}

/**
 * "Fork from step" on a workflow job's page (`loom.jobs.fork`): a new job keeps the steps recorded
 * before the chosen one and runs the rest again, with the payload typed here if any. Shown when the
 * job recorded steps and the visitor may act.
 */
export function forkPanel(ctx: PageContext, job: JobRecord): Html {
  if (!ctx.canAct || job.steps.length === 0) return html``;
  const names = [...new Set(job.steps.map((s) => s.name))];
  const options = names.map((name) => html`<option value="${name}">${name}</option>`);
  return panel(
    'job-fork',
    'Fork from a step',
    html`<form class="fork-form" method="post" action="${href(ctx, forkActionPath(job.id))}"><input type="hidden" name="_csrf" value="${ctx.csrf}">
<p class="muted">A new job keeps the results of the steps before the one chosen and runs it and the rest again. This job stays as it is.</p>
<label for="fork-step">From step</label>
<select id="fork-step" name="fromStep" data-test="fork-step">${options}</select>
<label for="fork-payload">Payload (JSON; empty keeps this job's)</label>
<textarea id="fork-payload" name="payload" rows="3" spellcheck="false" placeholder="${placeholder(job.payload)}" data-test="fork-payload"></textarea>
<button type="submit" class="btn primary" data-test="fork-job">Fork</button></form>`,
  );
}
