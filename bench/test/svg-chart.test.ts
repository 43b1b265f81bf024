import { escapeXml, niceMax, PANEL, renderLineChart, type LineChart } from '../src/svg-chart.js';

const chart = (over: Partial<LineChart> = {}): LineChart => ({
  title: 'Throughput <against> concurrency',
  description: 'desc & more',
  xLabel: 'concurrency (jobs)',
  x: [1, 10, 50, 200],
  panels: [
    {
      yLabel: 'throughput (jobs/s)',
      series: [
        { label: 'Loom', values: [0, 500, 1000, 2000] },
        { label: 'Agenda "6" & co', values: [10, 20, undefined, 40] },
      ],
    },
  ],
  ...over,
});

/** The points of the polyline of `series`, as numbers. */
function polyline(svg: string, series: string): [number, number][] {
  const m = new RegExp(`<polyline data-series="${series}"[^>]* points="([^"]+)"`).exec(svg);
  if (!m) throw new Error(`no polyline for ${series}`);
  return m[1]!.split(' ').map((p) => p.split(',').map(Number) as [number, number]);
}

describe('renderLineChart', () => {
  it('scales a polyline to the axes: x evenly spaced across the plot, y from 0 (bottom) to the round maximum (top)', () => {
    const svg = renderLineChart(chart());
    const pts = polyline(svg, 'Loom');
    const left = PANEL.left;
    const right = PANEL.width - PANEL.right;
    const bottom = PANEL.height - PANEL.bottom;
    const top = PANEL.top;
    expect(pts).toHaveLength(4);
    expect(pts.map(([x]) => x)).toEqual([left, left + (right - left) / 3, left + (2 * (right - left)) / 3, right].map((v) => Math.round(v * 10) / 10));
    // niceMax(2000) is 2000: 0 sits on the x axis, 2000 at the top, 1000 half-way.
    expect(pts[0]![1]).toBe(bottom);
    expect(pts[3]![1]).toBe(top);
    expect(pts[2]![1]).toBe((top + bottom) / 2);
  });

  it('skips a missing value: the line joins the points that exist', () => {
    const pts = polyline(renderLineChart(chart()), 'Agenda &quot;6&quot; &amp; co');
    expect(pts).toHaveLength(3);
    expect(pts[0]![0]).toBe(PANEL.left);
    expect(pts[2]![0]).toBe(PANEL.width - PANEL.right);
  });

  it('puts the second panel to the right of the first, on its own axis', () => {
    const svg = renderLineChart(
      chart({
        panels: [
          { yLabel: 'a', series: [{ label: 'L', values: [1, 2, 3, 4] }] },
          { yLabel: 'b', series: [{ label: 'M', values: [500, 300, 200, 100] }] },
        ],
      }),
    );
    const second = polyline(svg, 'M');
    expect(second[0]).toEqual([PANEL.width + PANEL.left, PANEL.top]);
    expect(second[3]![1]).toBe(PANEL.height - PANEL.bottom - (100 / 500) * (PANEL.height - PANEL.top - PANEL.bottom));
    expect(svg).toContain(`width="${2 * PANEL.width}"`);
  });

  it('escapes labels, title and description, and names them for screen readers', () => {
    const svg = renderLineChart(chart());
    expect(svg).toContain('<title id="title">Throughput &lt;against&gt; concurrency</title>');
    expect(svg).toContain('<desc id="desc">desc &amp; more</desc>');
    expect(svg).toContain('aria-labelledby="title desc"');
    expect(svg).toContain('>Agenda &quot;6&quot; &amp; co</text>');
    expect(svg).not.toContain('Agenda "6" & co');
    expect(svg).not.toContain('<against>');
  });

  it('labels the axes and draws a legend entry per series', () => {
    const svg = renderLineChart(chart());
    expect(svg).toContain('>concurrency (jobs)</text>');
    expect(svg).toContain('>throughput (jobs/s)</text>');
    for (const tick of ['1', '10', '50', '200', '0', '1,000', '2,000']) expect(svg).toContain(`>${tick}</text>`);
    const legend = /<g class="legend">(.*)<\/g>/.exec(svg)![1]!;
    expect(legend.match(/<text/g)).toHaveLength(2);
  });

  it('refuses a series whose length differs from the x values', () => {
    expect(() => renderLineChart(chart({ panels: [{ yLabel: 'y', series: [{ label: 'L', values: [1, 2] }] }] }))).toThrow(/2 values for 4 x values/);
  });
});

describe('niceMax and escapeXml', () => {
  it('rounds an axis maximum up to 1, 2, 2.5 or 5 × 10^n', () => {
    expect([niceMax(0), niceMax(7), niceMax(1950), niceMax(2001), niceMax(30), niceMax(0.3)]).toEqual([1, 10, 2000, 2500, 50, 0.5]);
  });
  it('escapes the five XML characters', () => {
    expect(escapeXml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;');
  });
});
