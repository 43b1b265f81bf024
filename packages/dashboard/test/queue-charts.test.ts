import { afterEach, describe, expect, test } from '@jest/globals';
import { startFixture, type DashboardFixture } from './fixture.js';
import { Visitor } from './http-client.js';

// Issue 34, item 7: a queue's 24-hour and 7-day charts, drawn from the store's `queueSeries`.
let fixture: DashboardFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

/** The bars of one chart of a page: each one's tooltip. */
function bars(page: string, chart: string): string[] {
  const figure = new RegExp(`<figure class="chart" data-chart="${chart}">([\\s\\S]*?)</figure>`).exec(page)?.[1] ?? '';
  return [...figure.matchAll(/<rect class="bar-[a-z]+"[^>]*><title>([^<]*)<\/title><\/rect>/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));
}

describe('queue charts', () => {
  test('the 24-hour charts draw the store’s 5-minute buckets of the queue', async () => {
    fixture = await startFixture({ history: true });
    const f = fixture;
    const now = f.clock.now();
    const first = new Date(Math.floor(now.getTime() / 300_000) * 300_000 - 287 * 300_000);
    const stored = await f.store.queueSeries({ queue: 'imports', resolution: '5m', from: first, to: now });
    expect(stored.length).toBeGreaterThan(1);
    const page = (await new Visitor(f.url).get('/loom/queues/imports')).text;
    const label = (start: Date) => `${start.toISOString().slice(0, 10)} ${start.toISOString().slice(11, 16)}`;
    const withCompleted = stored.filter((b) => b.completed > 0);
    expect(bars(page, 'throughput')).toEqual(
      withCompleted.map((b) => expect.stringMatching(new RegExp(`^${label(b.start)}–.* UTC: ${b.completed} completed$`))),
    );
    const withFailed = stored.filter((b) => b.failed > 0);
    expect(withFailed.length).toBeGreaterThan(0);
    expect(bars(page, 'failures')).toEqual(withFailed.map((b) => expect.stringMatching(new RegExp(`^${label(b.start)}–.* UTC: ${b.failed} failed$`))));
    expect(bars(page, 'dead')).toHaveLength(stored.filter((b) => b.dead > 0).length);
    const total = stored.reduce((n, b) => n + b.completed, 0);
    expect(page).toContain(
      `<span data-test="throughput-summary">Peak ${Math.max(...stored.map((b) => b.completed))} completed, ${total} in all over the last 24 hours.</span>`,
    );
    // Accessible: each chart names itself and describes its data, and has a table as text alternative.
    expect(page).toMatch(
      /<svg viewBox="0 0 960 130" role="img" aria-labelledby="throughput-title throughput-desc">\n<title id="throughput-title">Completed, last 24 hours<\/title>/,
    );
    expect(page).toContain('<details class="chart-data"><summary>Data (');
    // The range toggle is two links; this page is 24 hours.
    expect(page).toContain('<a class="tab active" href="/loom/queues/imports?range=24h" aria-current="page" data-range="24h">24 hours</a>');
    expect(page).toContain('<a class="tab" href="/loom/queues/imports?range=7d" data-range="7d">7 days</a>');
  });

  test('the 7-day charts draw hourly buckets; the wait chart is the mean wait of the starts', async () => {
    fixture = await startFixture({ history: true });
    const f = fixture;
    const now = f.clock.now();
    const first = new Date(Math.floor(now.getTime() / 3_600_000) * 3_600_000 - 167 * 3_600_000);
    const stored = await f.store.queueSeries({ queue: 'imports', resolution: '1h', from: first, to: now });
    const page = (await new Visitor(f.url).get('/loom/queues/imports?range=7d')).text;
    expect(page).toContain('aria-current="page" data-range="7d">7 days</a>');
    expect(bars(page, 'throughput')).toHaveLength(stored.filter((b) => b.completed > 0).length);
    expect(bars(page, 'wait')).toHaveLength(stored.filter((b) => b.started > 0 && b.waitMs > 0).length);
    // The page's own listQueues sampled the depth of the hour it is in.
    const after = await f.store.queueSeries({ queue: 'imports', resolution: '1h', from: first, to: new Date(now.getTime() + 1) });
    expect(after.at(-1)!.depth).not.toBeNull();
  });

  test('an unknown range is refused; the overview links each queue to its charts', async () => {
    fixture = await startFixture();
    const v = new Visitor(fixture.url);
    expect((await v.get('/loom/queues/emails?range=1y')).status).toBe(400);
    expect((await v.get('/loom/')).text).toContain('<a class="cell-note" href="/loom/queues/emails" data-test="queue-charts">charts</a>');
  });
});
