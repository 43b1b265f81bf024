import type { QueueSummary } from '@loom/core';
import { html, type Html } from '../html/html.js';
import { count, duration, utc } from '../html/format.js';
import { CHART_RANGES, type ChartRange, type QueueCharts } from '../queue-charts.js';
import { panel } from './components.js';
import { layout } from './layout.js';
import { href, type PageContext } from './page-context.js';

const WIDTH = 960;
const HEIGHT = 130;
const TOP = 14;
const BOTTOM = 22;
const LEFT = 52;

/** One series to draw: a value per bucket (null: nothing known), how to say a value, its bar class. */
interface Series {
  id: string;
  title: string;
  /** What the values are, for the text alternative. */
  unit: string;
  values: (number | null)[];
  say: (v: number) => string;
  /** A value as the axis shows it (short: the label column is narrow). */
  tick: (v: number) => string;
  barClass: string;
}

function bucketLabel(start: Date, bucketMs: number): string {
  const end = new Date(start.getTime() + bucketMs);
  return `${utc(start).slice(0, 16)}–${utc(end).slice(11, 16)} UTC`;
}

/**
 * A bar per bucket as an inline SVG (sizes as attributes, colours as stylesheet classes: the CSP
 * allows no inline style), with `<title>` and `<desc>` for assistive technology, a tooltip per
 * bar, and the non-empty buckets as a table under a disclosure: the chart's text alternative.
 */
function seriesChart(charts: QueueCharts, s: Series): Html {
  const n = charts.buckets.length;
  const plotWidth = WIDTH - LEFT - 4;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const known = s.values.filter((v): v is number => v !== null);
  const max = Math.max(1, ...known);
  const slot = plotWidth / n;
  const barWidth = Math.max(1, slot * 0.8);
  const base = TOP + plotHeight;
  const bars = charts.buckets.map((b, i) => {
    const v = s.values[i];
    if (v === null || v === undefined || v <= 0) return '';
    const h = Math.max(1, (v / max) * plotHeight);
    return html`<rect class="${s.barClass}" x="${(LEFT + i * slot + (slot - barWidth) / 2).toFixed(1)}" y="${(base - h).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${h.toFixed(1)}"><title>${bucketLabel(b.start, charts.bucketMs)}: ${s.say(v)}</title></rect>`;
  });
  const label = CHART_RANGES[charts.range].label;
  const total = known.reduce((a, b) => a + b, 0);
  const summary = (s.id === 'depth' || s.id === 'wait' ? known.length === 0 : total === 0)
    ? `No ${s.unit} recorded in the last ${label}.`
    : `Peak ${s.say(Math.max(...known))}${s.id === 'depth' || s.id === 'wait' ? '' : `, ${count(total)} in all`} over the last ${label}.`;
  const rows = charts.buckets
    .map((b, i) => [b, s.values[i]] as const)
    .filter(([, v]) => v !== null && v !== undefined && v > 0)
    .map(
      ([b, v]) =>
        html`<tr><td><time datetime="${b.start.toISOString()}" data-when="date">${utc(b.start)} UTC</time></td><td class="num">${s.say(v!)}</td></tr>`,
    );
  const titleId = `${s.id}-title`;
  const descId = `${s.id}-desc`;
  return html`<figure class="chart" data-chart="${s.id}">
<h3 class="chart-title">${s.title}</h3>
<div class="chart-scroll" tabindex="0" role="group" aria-label="${s.title} chart">
<svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="${titleId} ${descId}">
<title id="${titleId}">${s.title}, last ${label}</title>
<desc id="${descId}">${summary}</desc>
<line class="axis" x1="${LEFT}" y1="${base}" x2="${WIDTH - 4}" y2="${base}"></line>
<line class="grid" x1="${LEFT}" y1="${TOP}" x2="${WIDTH - 4}" y2="${TOP}"></line>
<text class="tick" x="${LEFT - 6}" y="${TOP + 4}" text-anchor="end">${s.tick(max)}</text>
<text class="tick" x="${LEFT - 6}" y="${base + 4}" text-anchor="end">0</text>
<text class="tick" x="${LEFT}" y="${HEIGHT - 4}">−${label}</text>
<text class="tick" x="${WIDTH - 4}" y="${HEIGHT - 4}" text-anchor="end">now</text>
${bars}
</svg>
</div>
<figcaption><span data-test="${s.id}-summary">${summary}</span>${
    rows.length > 0
      ? html` <details class="chart-data"><summary>Data (${count(rows.length)} non-empty ${charts.range === '24h' ? '5-minute' : 'hourly'} buckets, UTC)</summary><table><thead><tr><th scope="col">Bucket start</th><th scope="col">${s.title}</th></tr></thead><tbody>${rows}</tbody></table></details>`
      : ''
  }</figcaption>
</figure>`;
}

/** `<base>/queues/<name>?range=24h|7d`: one queue's counts and its charts (throughput, failures, depth, wait). */
export function queuePage(ctx: PageContext, data: { name: string; queue: QueueSummary | undefined; range: ChartRange; charts: QueueCharts | undefined }): Html {
  const { name, range, charts } = data;
  const path = `/queues/${encodeURIComponent(name)}`;
  const toggle = html`<nav class="tabs range-toggle" aria-label="Chart range">${(Object.keys(CHART_RANGES) as ChartRange[]).map(
    (r) =>
      html`<a class="tab${r === range ? ' active' : ''}" href="${href(ctx, path, { range: r })}"${r === range ? html` aria-current="page"` : ''} data-range="${r}">${CHART_RANGES[r].label}</a>`,
  )}</nav>`;
  let body: Html;
  if (!charts) body = html`<p class="empty">This store keeps no per-queue series (it has no <code>queueSeries</code>), so there are no charts.</p>`;
  else {
    const b = charts.buckets;
    const series: Series[] = [
      {
        id: 'throughput',
        title: 'Completed',
        unit: 'completions',
        values: b.map((x) => x.completed),
        say: (v) => `${count(v)} completed`,
        tick: count,
        barClass: 'bar-ok',
      },
      {
        id: 'failures',
        title: 'Failed attempts',
        unit: 'failed attempts',
        values: b.map((x) => x.failed),
        say: (v) => `${count(v)} failed`,
        tick: count,
        barClass: 'bar-dead',
      },
      { id: 'dead', title: 'Dead', unit: 'dead jobs', values: b.map((x) => x.dead), say: (v) => `${count(v)} dead`, tick: count, barClass: 'bar-dead' },
      {
        id: 'depth',
        title: 'Queue depth (queued, sampled)',
        unit: 'depth samples',
        values: b.map((x) => x.depth),
        say: (v) => `${count(v)} queued`,
        tick: count,
        barClass: 'bar-depth',
      },
      {
        id: 'wait',
        title: 'Wait before start (mean)',
        unit: 'starts',
        values: b.map((x) => (x.started > 0 ? x.waitMs / x.started : null)),
        say: (v) => duration(v),
        tick: (v) => duration(v),
        barClass: 'bar-wait',
      },
    ];
    body = html`${series.map((s) => seriesChart(charts, s))}`;
  }
  const counts = data.queue
    ? html`<p class="muted">Now: ${count(data.queue.counts.queued)} queued, ${count(data.queue.counts.running)} running, ${count(data.queue.counts.dead)} dead. <a href="${href(ctx, '/jobs', { queue: name })}">Its jobs</a></p>`
    : html`<p class="muted">No jobs in this queue now. <a href="${href(ctx, '/jobs', { queue: name })}">Its jobs</a></p>`;
  const page = html`<p class="crumbs"><a href="${href(ctx, '/')}">Queues</a> › ${name}</p>
<h1>Queue ${name}</h1>
${counts}
${panel('queue-charts', 'Charts', html`${toggle}${body}`)}`;
  return layout(ctx, { title: `Queue ${name}`, section: 'queues', body: page });
}
