import type { JobRecord, WaitTokenRecord } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { json, when } from '../html/format.js';
import { panel } from './components.js';
import { href, jobPath, type PageContext } from './page-context.js';

/** Longest schema shown in a token's row (a larger one is cut: the stored JSON Schema is the rule). */
const MAX_SCHEMA_CHARS = 2_000;

/** `/actions/tokens/<id>/<verb>`, the id encoded as one path segment. */
export function tokenActionPath(tokenId: string, verb: 'complete' | 'reject'): string {
  return `/actions/tokens/${encodeURIComponent(tokenId)}/${verb}`;
}

function schemaView(schema: unknown): Html {
  if (schema === undefined) return html`<span class="muted">any JSON</span>`;
  let text = json(schema);
  if (text.length > MAX_SCHEMA_CHARS) text = `${text.slice(0, MAX_SCHEMA_CHARS)}\n…`;
  return html`<details><summary>JSON Schema</summary><pre class="value" data-test="token-schema">${text}</pre></details>`;
}

/** The Approve (complete with a JSON output) and Reject (with a reason) forms of a pending token. */
function decisionForms(ctx: PageContext, job: JobRecord, token: WaitTokenRecord): Html {
  if (!ctx.canAct) return html``;
  const hidden = html`<input type="hidden" name="_csrf" value="${ctx.csrf}"><input type="hidden" name="back" value="${jobPath(job.id)}">`;
  const outputId = `token-output-${token.id}`;
  const reasonId = `token-reason-${token.id}`;
  return html`<div class="token-decision">
<form class="token-form" method="post" action="${href(ctx, tokenActionPath(token.id, 'complete'))}">${hidden}
<label for="${outputId}">Output (JSON)</label>
<textarea id="${outputId}" name="output" rows="3" spellcheck="false" data-test="token-output">{}</textarea>
<button type="submit" class="btn primary" data-test="approve-token">Approve</button></form>
<form class="token-form" method="post" action="${href(ctx, tokenActionPath(token.id, 'reject'))}" data-confirm="Reject this request?">${hidden}
<label for="${reasonId}">Reason</label>
<input id="${reasonId}" name="reason" maxlength="1000" autocomplete="off" data-test="token-reason">
<button type="submit" class="btn danger" data-test="reject-token">Reject</button></form>
</div>`;
}

function settlement(ctx: PageContext, token: WaitTokenRecord): Html {
  const at = token.settledAt ? html` ${when(token.settledAt, ctx.now)}` : '';
  const detail =
    token.status === 'completed' && token.output !== undefined
      ? html`<pre class="value">${json(token.output)}</pre>`
      : token.reason !== undefined
        ? html`<div class="state">${token.reason}</div>`
        : '';
  return html`<span class="badge token-${token.status}">${token.status}</span>${at}${detail}`;
}

/**
 * The wait tokens of a job (`ctx.createWaitToken`): each pending one with its schema, timeout and
 * Approve / Reject forms (`loom.tokens.complete` / `reject`); settled ones with their outcome.
 * Nothing when the job made none. Outside the page's live part, so live updates never wipe an
 * output being typed.
 */
export function waitTokensPanel(ctx: PageContext, job: JobRecord, tokens: readonly WaitTokenRecord[]): Html {
  if (tokens.length === 0) return html``;
  const pending = tokens.filter((t) => t.status === 'pending').length;
  // One block a token, not a table row: the forms stay in view on a phone.
  const blocks = tokens.map(
    (t) => html`<div class="wait-token" data-token="${t.id}"><dl class="facts">
<dt>Token</dt><dd class="mono">${t.id}</dd>
<dt>Created</dt><dd>${when(t.createdAt, ctx.now)}</dd>
<dt>Times out</dt><dd>${t.timeoutAt ? when(t.timeoutAt, ctx.now) : html`<span class="muted">never</span>`}${
      t.timeoutDefault ? html` <span class="muted">(then goes on with ${JSON.stringify(t.timeoutDefault.value)})</span>` : ''
    }</dd>
<dt>Expects</dt><dd>${schemaView(t.schema)}</dd>
${t.status === 'pending' ? '' : html`<dt>Decision</dt><dd>${settlement(ctx, t)}</dd>`}
</dl>${t.status === 'pending' ? decisionForms(ctx, job, t) : ''}</div>`,
  );
  const title = pending > 0 ? `Wait tokens (${pending} pending)` : `Wait tokens (${tokens.length})`;
  return panel('job-tokens', title, html`${blocks}`);
}
