import { html, type Html } from '../html/html.js';
import type { LiveTopic } from '../live/fingerprints.js';
import { href, type PageContext, type Section } from './page-context.js';

const NAV: { section: Section; label: string; path: string; query?: Record<string, string> }[] = [
  { section: 'queues', label: 'Queues', path: '/' },
  { section: 'jobs', label: 'Jobs', path: '/jobs' },
  { section: 'dead', label: 'Dead letters', path: '/jobs', query: { status: 'dead' } },
  { section: 'schedules', label: 'Schedules', path: '/schedules' },
  { section: 'flow', label: 'Flow', path: '/flow' },
  { section: 'workers', label: 'Workers', path: '/workers' },
];

/**
 * The header's time toggle: how every `time[data-when]` reads (see `when()`). The page script
 * shows it (it is `hidden` without script, where times stay relative), applies the choice and keeps
 * it in `localStorage`.
 */
const TIME_MODES: [mode: string, label: string][] = [
  ['relative', 'Relative'],
  ['utc', 'UTC'],
  ['local', 'Local'],
];

/** What a live page is about and the fingerprint it was rendered with (see `LiveFeed`). */
export interface LivePage {
  topic: LiveTopic;
  fingerprint: string;
}

/**
 * The page around every view. The script is a file of the package (the CSP allows no inline
 * script); `data-events`, on live pages, is where their updates stream from: the topic and the
 * fingerprint the page was rendered with (a hash, never job data; a job page names its job's id).
 */
export function layout(ctx: PageContext, page: { title: string; section?: Section; body: Html; live?: LivePage }): Html {
  const v = ctx.assetVersion;
  const nav = NAV.map(
    (item) =>
      html`<a href="${href(ctx, item.path, item.query)}"${item.section === page.section ? html` class="active" aria-current="page"` : ''}>${item.label}</a>`,
  );
  const flash = ctx.flash ? html`<div class="flash flash-${ctx.flash.kind}" role="status">${ctx.flash.text}</div>` : '';
  const live = page.live;
  const events = live
    ? href(ctx, '/events', live.topic.kind === 'job' ? { job: live.topic.id, v: live.fingerprint } : { topic: live.topic.kind, v: live.fingerprint })
    : undefined;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${page.title} · ${ctx.title}</title>
<link rel="stylesheet" href="${href(ctx, '/assets/dashboard.css', { v })}">
<link rel="icon" href="${href(ctx, '/assets/favicon.svg', { v })}" type="image/svg+xml">
<script src="${href(ctx, '/assets/dashboard.js', { v })}" defer></script>
</head>
<body${events ? html` data-events="${events}"` : ''}>
<header class="top">
<a class="brand" href="${href(ctx, '/')}"><img src="${href(ctx, '/assets/favicon.svg', { v })}" alt="" width="20" height="20">${ctx.title}</a>
<nav>${nav}</nav>
<span class="spacer"></span>
${ctx.canAct ? '' : html`<span class="pill" title="Pass authorize(req) to loomDashboard to allow actions">read-only</span>`}
<span class="time-toggle" id="time-toggle" role="group" aria-label="Show times as" hidden>${TIME_MODES.map(
    ([mode, label]) =>
      html`<button type="button" class="btn" data-time-mode="${mode}" aria-pressed="${mode === 'relative' ? 'true' : 'false'}">${label}</button>`,
  )}</span>
<span class="pill live-status" id="live-status" data-state="off" title="Live updates">live</span>
</header>
<main>
${flash}
${page.body}
</main>
</body>
</html>
`;
}
