import type { FlowUsage } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { count, duration, when } from '../html/format.js';
import { panel, table } from './components.js';
import { layout } from './layout.js';
import { href, type PageContext } from './page-context.js';

const KIND_LABEL: Record<FlowUsage['kind'], string> = {
  globalConcurrency: 'global concurrency',
  rateLimit: 'rate limit',
  group: 'group concurrency',
};

/** Use against the limit: a meter (full in the danger colour) and the numbers. */
function useCell(u: FlowUsage): Html {
  if (u.limit === undefined) return html`<span class="muted">${count(u.used)} (limit not known)</span>`;
  const full = u.used >= u.limit;
  const unit = u.kind === 'rateLimit' ? 'started' : 'running';
  return html`<meter min="0" max="${u.limit}" low="${u.limit * 0.5}" high="${u.limit * 0.8}" optimum="0" value="${Math.min(u.used, u.limit)}" aria-label="${u.used} of ${u.limit} ${unit}"></meter>
<span class="${full ? 'flow-full' : ''}">${count(u.used)} / ${count(u.limit)} ${unit}${full ? ' — full' : ''}</span>`;
}

/**
 * `<base>/flow`: flow control as it stands (core's `queues.flow()`): each job name's global
 * concurrency and rate limit with its use, the group and rate-limit keys in use, and holds.
 */
export function flowPage(ctx: PageContext, data: { usage: FlowUsage[] }): Html {
  const rows = data.usage.map(
    (u) => html`<tr data-flow="${u.name}" data-kind="${u.kind}">
<td><a href="${href(ctx, '/jobs', { name: u.name, status: 'queued' })}">${u.name}</a></td>
<td>${KIND_LABEL[u.kind]}</td>
<td class="mono">${u.key ?? html`<span class="muted">whole name</span>`}</td>
<td class="flow-use">${useCell(u)}</td>
<td>${u.perMs !== undefined ? html`per ${duration(u.perMs)}` : ''}</td>
<td>${u.heldUntil ? html`<span class="badge paused">held</span> until ${when(u.heldUntil, ctx.now)}` : ''}</td>
</tr>`,
  );
  const body = html`<h1>Flow control</h1>
<p class="lead">Limits shared by every engine: what each allows, how much is in use now, and what is held. A job name shows here once an engine has claimed its jobs with its limits; keys show while they are in use.</p>
${panel('flow', undefined, table(['Job', 'Limit', 'Key', 'In use', 'Window', 'Hold'], rows, 'No flow limits known yet: give a @Job rateLimit, globalConcurrency or group, and run an engine.'))}`;
  return layout(ctx, { title: 'Flow control', section: 'flow', body });
}
