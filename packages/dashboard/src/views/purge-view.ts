import { html, type Html } from '../html/html.js';
import { count, instant } from '../html/format.js';
import { actionForm, panel } from './components.js';
import { layout } from './layout.js';
import { href, type PageContext } from './page-context.js';

/**
 * `<base>/dead-letters/purge?name=…&queue=…`: the confirmation a purge needs. It names what
 * matches and how many; the form carries the time of this page, so letters that die after the
 * operator looked are not deleted with the others.
 */
export function purgePage(ctx: PageContext, data: { name?: string; queue?: string; matching: number; more: boolean }): Html {
  const what = [
    data.name !== undefined ? html`job name <strong>${data.name}</strong>` : '',
    data.queue !== undefined ? html`queue <strong>${data.queue}</strong>` : '',
  ].filter((x) => x !== '');
  const scope = what.length ? html`the dead letters of ${what[0]}${what[1] ? html` in ${what[1]}` : ''}` : html`<strong>all</strong> dead letters`;
  const back = href(ctx, '/jobs', { status: 'dead', name: data.name, queue: data.queue });
  const n = `${count(data.matching)}${data.more ? '+' : ''}`;
  const form =
    data.matching === 0
      ? html`<p>Nothing to purge.</p>`
      : ctx.canAct
        ? actionForm(ctx, '/actions/dead-letters/purge', `Delete ${n} dead letters`, {
            variant: 'danger',
            fields: { name: data.name, queue: data.queue, before: String(ctx.now.getTime()), confirm: 'purge' },
            testId: 'confirm-purge',
          })
        : html`<p class="muted">Read-only: actions need authorize(req).</p>`;
  const body = html`<h1>Purge dead letters</h1>
${panel(
  'purge',
  undefined,
  html`<p>This deletes ${scope} that died before ${instant(ctx.now)}: <strong>${n}</strong> of them. They cannot be retried afterwards.</p>
<div class="toolbar">${form}<a class="btn link" href="${back}">Back</a></div>`,
)}`;
  return layout(ctx, { title: 'Purge dead letters', section: 'dead', body });
}
