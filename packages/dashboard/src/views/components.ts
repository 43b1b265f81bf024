import type { JobStatus } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { href, type PageContext } from './page-context.js';

/** A status as a coloured badge. */
export function statusBadge(status: JobStatus): Html {
  return html`<span class="badge status-${status}">${status}</span>`;
}

/**
 * A job's status badge as an operator reads it: a workflow asleep in `ctx.sleep` is stored
 * `queued` (due at its wake time) but is counted with the waiting jobs, so it reads "sleeping",
 * coloured as waiting, its stored status in the tooltip.
 */
export function jobStatusBadge(job: { status: JobStatus; sleepUntil?: Date }, now: Date): Html {
  if (job.status === 'queued' && job.sleepUntil !== undefined && job.sleepUntil > now)
    return html`<span class="badge status-waiting" title="stored as queued: it runs again when it wakes">sleeping</span>`;
  return statusBadge(job.status);
}

/**
 * A POST form with one button and the CSRF token. `fields` are hidden inputs (ids and filters,
 * never anything else); `extra` is markup put after the button (a checkbox that qualifies the action).
 * Shown only when the visitor may act.
 */
export function actionForm(
  ctx: PageContext,
  action: string,
  label: string,
  options: { fields?: Record<string, string | undefined>; variant?: 'danger' | 'primary' | 'plain'; confirm?: string; testId?: string; extra?: Html } = {},
): Html {
  if (!ctx.canAct) return html``;
  const hidden = Object.entries(options.fields ?? {})
    .filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '')
    .map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`);
  return html`<form class="inline" method="post" action="${href(ctx, action)}"${options.confirm ? html` data-confirm="${options.confirm}"` : ''}><input type="hidden" name="_csrf" value="${ctx.csrf}">${hidden}<button type="submit" class="btn ${options.variant ?? 'plain'}"${options.testId ? html` data-test="${options.testId}"` : ''}>${label}</button>${options.extra ?? ''}</form>`;
}

/** A titled block of the page; `live` blocks are replaced in place when the store changes (the page script). */
export function panel(id: string, title: string | Html | undefined, body: Html, options: { live?: boolean; extra?: Html } = {}): Html {
  return html`<section class="panel" id="${id}"${options.live ? html` data-live` : ''}>${
    title === undefined ? '' : html`<div class="panel-head"><h2>${title}</h2>${options.extra ?? ''}</div>`
  }${body}</section>`;
}

/** A table, or a line saying there is nothing to show. */
export function table(headers: readonly (string | Html)[], rows: readonly Html[], empty: string): Html {
  if (rows.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<div class="table-wrap" tabindex="0"><table><thead><tr>${headers.map((h) => html`<th>${h}</th>`)}</tr></thead><tbody>${rows}</tbody></table></div>`;
}
