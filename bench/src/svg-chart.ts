/**
 * Line charts as plain SVG text (no chart library): the scaling curves of `npm run bench -- --only
 * scaling`. One chart holds panels side by side (throughput, CPU per job), each with its own y
 * axis, the x values evenly spaced (1, 10, 50, 200 are categories, not a linear scale), one line
 * per series and a shared legend.
 */

/** One line of a panel: a value per x (undefined or non-finite: no point there). */
export interface ChartSeries {
  label: string;
  values: readonly (number | undefined)[];
}

/** One panel: a y axis of its own, the same x values as the chart's. */
export interface ChartPanel {
  /** The y axis label, with its unit, e.g. "throughput (jobs/s)". */
  yLabel: string;
  series: readonly ChartSeries[];
}

/** A chart: title and description (for screen readers), x axis, panels. */
export interface LineChart {
  title: string;
  description: string;
  /** The x axis label, with its unit, e.g. "concurrency (jobs at once per engine)". */
  xLabel: string;
  x: readonly number[];
  panels: readonly ChartPanel[];
}

/** Panel geometry (SVG user units). */
export const PANEL = { width: 420, height: 300, left: 64, right: 16, top: 48, bottom: 52 } as const;
const LEGEND_HEIGHT = 28;
/** Line colours, one per series in order (distinguishable in colour-blind palettes: Okabe–Ito). */
export const COLOURS = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9'] as const;
/** Dash patterns, so lines stay apart without colour too. */
const DASHES = ['', '6 3', '2 3', '8 3 2 3'] as const;

/** Text for an SVG text node or attribute: &, <, >, " and ' escaped. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}

/** A round upper bound of the axis (1, 2, 2.5, 5 × 10^n) at or above `max`. */
export function niceMax(max: number): number {
  if (!(max > 0)) return 1;
  const exp = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * exp >= max) return m * exp;
  return 10 * exp;
}

/** Axis numbers: integers with thousands separators, small ones with up to 2 decimals. */
function formatTick(v: number): string {
  return v >= 100 || Number.isInteger(v) ? Math.round(v).toLocaleString('en-US') : String(Math.round(v * 100) / 100);
}

/** x of the i-th of n evenly spaced values inside a panel starting at `x0`. */
export function xAt(x0: number, i: number, n: number): number {
  const plot = PANEL.width - PANEL.left - PANEL.right;
  return x0 + PANEL.left + (n === 1 ? plot / 2 : (i * plot) / (n - 1));
}

/** y of `v` on an axis from 0 to `top`. */
export function yAt(v: number, top: number): number {
  const plot = PANEL.height - PANEL.top - PANEL.bottom;
  return PANEL.top + plot - (v / top) * plot;
}

const fmt = (n: number): string => String(Math.round(n * 10) / 10);

function renderPanel(chart: LineChart, panel: ChartPanel, x0: number): string {
  const n = chart.x.length;
  const finite = panel.series.flatMap((s) => s.values.filter((v): v is number => v !== undefined && Number.isFinite(v)));
  const top = niceMax(Math.max(0, ...finite));
  const bottomY = yAt(0, top);
  const out: string[] = [`<g class="panel">`];
  // Grid and y ticks: 0, ¼, ½, ¾, 1 of the axis.
  for (let k = 0; k <= 4; k++) {
    const v = (top * k) / 4;
    const y = fmt(yAt(v, top));
    out.push(`<line x1="${fmt(x0 + PANEL.left)}" y1="${y}" x2="${fmt(x0 + PANEL.width - PANEL.right)}" y2="${y}" stroke="#ddd"/>`);
    out.push(`<text x="${fmt(x0 + PANEL.left - 6)}" y="${y}" text-anchor="end" dominant-baseline="middle">${escapeXml(formatTick(v))}</text>`);
  }
  out.push(`<line x1="${fmt(x0 + PANEL.left)}" y1="${fmt(bottomY)}" x2="${fmt(x0 + PANEL.width - PANEL.right)}" y2="${fmt(bottomY)}" stroke="#333"/>`);
  out.push(`<line x1="${fmt(x0 + PANEL.left)}" y1="${fmt(PANEL.top)}" x2="${fmt(x0 + PANEL.left)}" y2="${fmt(bottomY)}" stroke="#333"/>`);
  chart.x.forEach((xv, i) => {
    out.push(`<text x="${fmt(xAt(x0, i, n))}" y="${fmt(bottomY + 16)}" text-anchor="middle">${escapeXml(formatTick(xv))}</text>`);
  });
  out.push(
    `<text x="${fmt(x0 + PANEL.left + (PANEL.width - PANEL.left - PANEL.right) / 2)}" y="${fmt(PANEL.height - 10)}" text-anchor="middle">${escapeXml(chart.xLabel)}</text>`,
  );
  out.push(`<text x="${fmt(x0 + PANEL.left)}" y="${fmt(PANEL.top - 14)}" font-weight="bold">${escapeXml(panel.yLabel)}</text>`);
  panel.series.forEach((s, si) => {
    const colour = COLOURS[si % COLOURS.length]!;
    const dash = DASHES[si % DASHES.length]!;
    const points = s.values.flatMap((v, i) => (v === undefined || !Number.isFinite(v) ? [] : [{ x: xAt(x0, i, n), y: yAt(v, top), v }]));
    if (points.length > 1)
      out.push(
        `<polyline data-series="${escapeXml(s.label)}" fill="none" stroke="${colour}" stroke-width="2"${dash === '' ? '' : ` stroke-dasharray="${dash}"`} points="${points.map((p) => `${fmt(p.x)},${fmt(p.y)}`).join(' ')}"/>`,
      );
    for (const p of points)
      out.push(`<circle cx="${fmt(p.x)}" cy="${fmt(p.y)}" r="3" fill="${colour}"><title>${escapeXml(`${s.label}: ${formatTick(p.v)}`)}</title></circle>`);
  });
  out.push('</g>');
  return out.join('\n');
}

/** The chart as an SVG document (UTF-8 text, no XML declaration needed). */
export function renderLineChart(chart: LineChart): string {
  for (const panel of chart.panels)
    for (const s of panel.series)
      if (s.values.length !== chart.x.length)
        throw new Error(`chart "${chart.title}": series "${s.label}" has ${s.values.length} values for ${chart.x.length} x values`);
  const width = PANEL.width * chart.panels.length;
  const height = PANEL.height + LEGEND_HEIGHT + 24;
  const labels = [...new Set(chart.panels.flatMap((p) => p.series.map((s) => s.label)))];
  const legend = labels.map((label, i) => {
    const x = 16 + i * 160;
    const y = PANEL.height + 20;
    const dash = DASHES[i % DASHES.length]!;
    return (
      `<line x1="${x}" y1="${y}" x2="${x + 24}" y2="${y}" stroke="${COLOURS[i % COLOURS.length]!}" stroke-width="2"${dash === '' ? '' : ` stroke-dasharray="${dash}"`}/>` +
      `<text x="${x + 30}" y="${y}" dominant-baseline="middle">${escapeXml(label)}</text>`
    );
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="title desc" font-family="sans-serif" font-size="12">`,
    `<title id="title">${escapeXml(chart.title)}</title>`,
    `<desc id="desc">${escapeXml(chart.description)}</desc>`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="16" y="20" font-size="14" font-weight="bold">${escapeXml(chart.title)}</text>`,
    ...chart.panels.map((p, i) => renderPanel(chart, p, i * PANEL.width)),
    `<g class="legend">${legend.join('')}</g>`,
    '</svg>',
    '',
  ].join('\n');
}
