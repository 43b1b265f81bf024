import { PRESENCE_MISSED_BEATS, type WorkerPresence } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { count, when } from '../html/format.js';
import { workersFingerprint } from '../live/fingerprints.js';
import { panel, table } from './components.js';
import { layout } from './layout.js';
import { href, jobPath, type PageContext } from './page-context.js';

/** Running jobs linked from a row; the rest are counted. */
const JOBS_SHOWN = 3;

function runningCell(ctx: PageContext, w: WorkerPresence): Html {
  const shown = w.runningJobIds
    .slice(0, JOBS_SHOWN)
    .map((id) => html` <a class="mono" href="${href(ctx, jobPath(id))}">${id.length > 10 ? `…${id.slice(-8)}` : id}</a>`);
  const more = w.running - shown.length;
  return html`${count(w.running)} / ${count(w.concurrency)}${shown.length > 0 ? html`<span class="muted">:</span>` : ''}${shown}${
    more > 0 && shown.length > 0 ? html` <span class="muted">+${count(more)} more</span>` : ''
  }`;
}

/**
 * `<base>/workers`: the engine instances sharing the store that are alive (core's
 * `workers.list()`, from the presence rows engines write every few seconds), with what each
 * serves and runs. An engine that missed its last beats is gone and not shown.
 */
export function workersPage(ctx: PageContext, data: { workers: WorkerPresence[] }): Html {
  const rows = data.workers.map(
    (w) => html`<tr data-worker="${w.id}">
<td class="mono">${w.id}</td>
<td>${when(w.lastSeenAt, ctx.now)}</td>
<td>${runningCell(ctx, w)}</td>
<td>${w.state === 'stopping' ? html`<span class="badge paused">stopping</span>` : html`<span class="badge active">running</span>`}</td>
<td>${w.host}</td>
<td>${w.pid}</td>
<td>Loom ${w.version}<div class="state">Node ${w.node}</div></td>
<td class="wrap">${w.queues.map((q, i) => html`${i > 0 ? ', ' : ''}<a href="${href(ctx, '/jobs', { queue: q })}">${q}</a>`)}</td>
<td>${when(w.startedAt, ctx.now)}</td>
</tr>`,
  );
  const n = data.workers.length;
  // Who and whether alive first: on a small screen the table scrolls inside its panel.
  const body = html`<h1>Workers</h1>
<p class="lead">The engines sharing this store, as each last described itself. A started engine records its presence every few seconds (<code>presenceInterval</code>, 5 s by default) and removes it when it stops; one that misses ${PRESENCE_MISSED_BEATS} beats in a row is gone and leaves this list.</p>
${panel(
  'workers',
  `${count(n)} live engine${n === 1 ? '' : 's'}`,
  table(
    ['Engine', 'Last seen', 'Running', 'State', 'Host', 'PID', 'Version', 'Queues', 'Started'],
    rows,
    'No live engines: none sharing this store has recorded its presence in its last few beats. Start one (loom.start()), or check that it uses this database.',
  ),
  { live: true },
)}`;
  return layout(ctx, { title: 'Workers', section: 'workers', body, live: { topic: { kind: 'workers' }, fingerprint: workersFingerprint(data.workers) } });
}
