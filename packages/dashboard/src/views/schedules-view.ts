import type { StoredScheduleInfo } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { when } from '../html/format.js';
import { schedulesFingerprint } from '../live/fingerprints.js';
import { actionForm, panel, table } from './components.js';
import { layout } from './layout.js';
import { href, type PageContext } from './page-context.js';

/** `<base>/schedules`: every cron schedule with its next and last fire, and pause, resume, trigger. */
export function schedulesPage(ctx: PageContext, data: { schedules: StoredScheduleInfo[] }): Html {
  const rows = data.schedules.map((s) => {
    const path = `/actions/schedules/${encodeURIComponent(s.name)}`;
    return html`<tr data-schedule="${s.name}">
<td><a href="${href(ctx, '/jobs', { name: s.name })}">${s.name}</a></td>
<td class="mono">${s.cron ?? html`<span class="muted">not described yet</span>`}</td>
<td>${s.timezone ?? ''}</td>
<td>${s.paused ? html`<span class="badge paused">paused</span>` : html`<span class="badge active">active</span>`}</td>
<td>${s.paused ? html`<span class="muted">paused</span>` : when(s.nextFireAt, ctx.now)}</td>
<td>${when(s.lastFireAt, ctx.now)}</td>
<td class="actions">${
      s.paused
        ? actionForm(ctx, `${path}/resume`, 'Resume', { variant: 'primary', testId: 'resume-schedule' })
        : actionForm(ctx, `${path}/pause`, 'Pause', { testId: 'pause-schedule' })
    }${actionForm(ctx, `${path}/trigger`, 'Run now', { testId: 'trigger-schedule' })}</td>
</tr>`;
  });
  const body = html`<h1>Schedules</h1>
${panel('schedules', undefined, table(['Job', 'Cron', 'Time zone', 'State', 'Next fire', 'Last fire', ''], rows, 'No schedules: give a @Job a schedule option to see it here.'), { live: true })}`;
  return layout(ctx, {
    title: 'Schedules',
    section: 'schedules',
    body,
    live: { topic: { kind: 'schedules' }, fingerprint: schedulesFingerprint(data.schedules) },
  });
}
