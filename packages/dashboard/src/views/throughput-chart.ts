import { html, type Html } from '../html/html.js';
import { count, utc } from '../html/format.js';
import type { FinishedSeries } from '../finished-series.js';

const WIDTH = 960;
const HEIGHT = 150;
const TOP = 16;
const BOTTOM = 22;
const LEFT = 36;

/**
 * Completions and deaths per bucket as an inline SVG bar chart: green completed, red dead
 * stacked on top, the largest bucket labelled. Sizes are SVG attributes and colours are classes
 * from the stylesheet (the CSP allows no inline style). Each bar has a `<title>` for a tooltip.
 */
export function throughputChart(series: FinishedSeries): Html {
  const n = series.starts.length;
  const plotWidth = WIDTH - LEFT - 4;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const completed = series.completed ?? series.dead.map(() => 0);
  const max = Math.max(1, ...completed.map((c, i) => c + series.dead[i]!));
  const slot = plotWidth / n;
  const barWidth = Math.max(2, slot * 0.72);
  const scale = (v: number) => (v / max) * plotHeight;
  const bars = series.starts.map((start, i) => {
    const ok = completed[i]!;
    const dead = series.dead[i]!;
    const x = LEFT + i * slot + (slot - barWidth) / 2;
    const okHeight = scale(ok);
    const deadHeight = scale(dead);
    const base = TOP + plotHeight;
    const end = new Date(start.getTime() + series.bucketMs);
    return html`<g><title>${utc(start).slice(11, 16)}–${utc(end).slice(11, 16)} UTC: ${series.completed ? `${count(ok)} completed, ` : ''}${count(dead)} dead</title>${
      ok > 0
        ? html`<rect class="bar-ok" x="${x.toFixed(1)}" y="${(base - okHeight).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${okHeight.toFixed(1)}"></rect>`
        : ''
    }${
      dead > 0
        ? html`<rect class="bar-dead" x="${x.toFixed(1)}" y="${(base - okHeight - deadHeight).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${deadHeight.toFixed(1)}"></rect>`
        : ''
    }<rect class="bar-hit" x="${(LEFT + i * slot).toFixed(1)}" y="${TOP}" width="${slot.toFixed(1)}" height="${plotHeight}"></rect></g>`;
  });
  const totalOk = completed.reduce((a, b) => a + b, 0);
  const totalDead = series.dead.reduce((a, b) => a + b, 0);
  const minutes = Math.round((n * series.bucketMs) / 60_000);
  return html`<figure class="chart">
<svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="Jobs finished over the last ${minutes} minutes: ${count(totalOk)} completed, ${count(totalDead)} dead">
<line class="axis" x1="${LEFT}" y1="${TOP + plotHeight}" x2="${WIDTH - 4}" y2="${TOP + plotHeight}"></line>
<line class="grid" x1="${LEFT}" y1="${TOP}" x2="${WIDTH - 4}" y2="${TOP}"></line>
<text class="tick" x="${LEFT - 6}" y="${TOP + 4}" text-anchor="end">${count(max)}</text>
<text class="tick" x="${LEFT - 6}" y="${TOP + plotHeight + 4}" text-anchor="end">0</text>
<text class="tick" x="${LEFT}" y="${HEIGHT - 4}">−${minutes} min</text>
<text class="tick" x="${LEFT + plotWidth / 2}" y="${HEIGHT - 4}" text-anchor="middle">−${Math.round(minutes / 2)} min</text>
<text class="tick" x="${WIDTH - 4}" y="${HEIGHT - 4}" text-anchor="end">now</text>
${bars}
</svg>
<figcaption>${
    series.completed
      ? html`<span class="key key-ok"></span><span data-test="completed-total">${count(totalOk)}</span> completed `
      : html`<span class="muted">Completions are not counted: this store keeps completed jobs forever, so nothing indexes their finish time (turn retention of completed jobs on to see them).</span> `
  }<span class="key key-dead"></span><span data-test="dead-total">${count(totalDead)}</span> dead in the last ${minutes} minutes</figcaption>
</figure>`;
}
