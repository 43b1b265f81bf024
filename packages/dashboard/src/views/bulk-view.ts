import type { BulkAction, BulkResult } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { count } from '../html/format.js';
import { panel } from './components.js';
import { layout } from './layout.js';
import { href, type PageContext } from './page-context.js';

/** The bulk actions the dashboard offers, by the value their button posts. */
export const BULK_BUTTONS: readonly { value: string; action: BulkAction; label: string; variant: 'primary' | 'danger' | 'plain' }[] = [
  { value: 'cancel', action: 'cancel', label: 'Cancel', variant: 'danger' },
  { value: 'retry', action: 'retry', label: 'Retry', variant: 'primary' },
  { value: 'run-now', action: 'runNow', label: 'Run now', variant: 'plain' },
  { value: 'remove', action: 'remove', label: 'Remove', variant: 'danger' },
];

const DONE: Record<BulkAction, [string, string]> = {
  cancel: ['Cancelled', 'Would cancel'],
  retry: ['Retried', 'Would retry'],
  remove: ['Removed', 'Would remove'],
  runNow: ['Made due now', 'Would make due now'],
};

/** The hidden fields that carry a jobs filter in a form (the page's query, but its cursor). */
export interface FilterFields {
  statuses?: readonly string[];
  name?: string;
  queue?: string;
  key?: string;
  payload?: string;
}

function hiddenFilter(filter: FilterFields): Html[] {
  const one = (name: string, value: string | undefined) => (value ? [html`<input type="hidden" name="${name}" value="${value}">`] : []);
  return [
    ...(filter.statuses ?? []).map((s) => html`<input type="hidden" name="status" value="${s}">`),
    ...one('name', filter.name),
    ...one('queue', filter.queue),
    ...one('key', filter.key),
    ...one('payload', filter.payload),
  ];
}

/**
 * The bar above a job list: the action buttons, and whether they act on the rows ticked on this
 * page (each row's checkbox belongs to this form by its `form` attribute) or on every job matching
 * the filter (`matching`: the server shows a confirmation with the counts first). Shown only when
 * the visitor may act.
 */
export function bulkBar(ctx: PageContext, data: { filter: FilterFields; matching?: number; rows: number }): Html {
  if (!ctx.canAct || data.rows === 0) return html``;
  const all = data.matching === undefined ? 'All matching this filter' : `All ${count(data.matching)} matching this filter`;
  return html`<form id="bulk" class="bulk-bar" method="post" action="${href(ctx, '/actions/jobs/bulk')}" data-test="bulk-bar">
<input type="hidden" name="_csrf" value="${ctx.csrf}"><input type="hidden" name="back" value="${ctx.here}">${hiddenFilter(data.filter)}
<fieldset class="bulk-scope"><legend>Act on</legend>
<label><input type="radio" name="scope" value="selected" checked data-test="scope-selected"> <span data-test="selected-count">Selected</span> on this page</label>
<label><input type="radio" name="scope" value="matching" data-test="scope-matching"> ${all}</label>
</fieldset>
<div class="bulk-buttons">${BULK_BUTTONS.map(
    (b) => html`<button type="submit" name="action" value="${b.value}" class="btn ${b.variant}" data-test="bulk-${b.value}">${b.label}</button>`,
  )}</div>
</form>`;
}

/** A bulk result in one sentence, for the flash after the action. */
export function bulkSummary(result: BulkResult, scope: string): string {
  const [done, would] = DONE[result.action];
  let text = `${result.dryRun ? would : done} ${count(result.changed)} of ${count(result.matched)} ${scope}.`;
  if (result.requested) text += ` ${count(result.requested)} running: their cancel was requested, they stop within one heartbeat.`;
  if (result.skipped > 0) {
    text += ` Skipped ${count(result.skipped)}: ${result.skippedBy
      .slice(0, 3)
      .map((s) => `${s.reason} (${count(s.count)})`)
      .join('; ')}${result.skippedBy.length > 3 ? '; …' : ''}.`;
  }
  return text;
}

/**
 * The confirmation an action over every job matching a filter needs: what a dry run found, and a
 * form that posts the same action and filter with `confirm=yes`.
 */
export function bulkConfirmPage(ctx: PageContext, data: { button: string; preview: BulkResult; filter: FilterFields; back: string }): Html {
  const b = BULK_BUTTONS.find((x) => x.value === data.button)!;
  const { preview } = data;
  const form =
    preview.changed === 0
      ? html`<p data-test="bulk-nothing">Nothing to change.</p>`
      : html`<form class="inline" method="post" action="${href(ctx, '/actions/jobs/bulk')}"><input type="hidden" name="_csrf" value="${ctx.csrf}"><input type="hidden" name="back" value="${data.back}">${hiddenFilter(data.filter)}<input type="hidden" name="scope" value="matching"><input type="hidden" name="confirm" value="yes"><button type="submit" name="action" value="${b.value}" class="btn ${b.variant}" data-test="confirm-bulk">${b.label} ${count(preview.changed)} jobs</button></form>`;
  const skipped = preview.skippedBy.map((s) => html`<li>${count(s.count)}: ${s.reason}</li>`);
  const body = html`<h1>${b.label}: every matching job</h1>
${panel(
  'bulk-confirm',
  undefined,
  html`<p data-test="bulk-preview">${bulkSummary(preview, 'jobs matching the filter')}</p>${skipped.length ? html`<ul class="skips">${skipped}</ul>` : ''}
<p class="muted">Jobs that change state before you confirm are skipped, not forced.</p>
<div class="toolbar">${form}<a class="btn link" href="${`${ctx.base}${data.back}`}">Back</a></div>`,
)}`;
  return layout(ctx, { title: `${b.label} matching jobs`, section: 'jobs', body });
}
