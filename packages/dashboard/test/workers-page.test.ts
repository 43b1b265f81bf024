import { afterEach, describe, expect, test } from '@jest/globals';
import { hostname } from 'node:os';
import { LOOM_VERSION, type WorkerPresence } from '@loom/core';
import { launchChromium, watchedPage } from './chromium.js';
import { startFixture, type DashboardFixture } from './fixture.js';
import { Visitor } from './http-client.js';

// Issue 34, item 4: the Workers page lists the live engines (their presence rows), linked from the
// navigation, with a clear empty state.

let fixture: DashboardFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

function presence(id: string, now: Date, over: Partial<WorkerPresence> = {}): WorkerPresence {
  return {
    id,
    host: 'web-2',
    pid: 77,
    version: '0.1.0',
    node: 'v22.1.0',
    queues: ['emails'],
    concurrency: 4,
    running: 0,
    runningJobIds: [],
    state: 'running',
    startedAt: new Date(now.getTime() - 3_600_000),
    lastSeenAt: new Date(now.getTime() - 4_000),
    expiresAt: new Date(now.getTime() + 11_000),
    ...over,
  };
}

/** The cells of the row of engine `id` on the page, as text. */
function cells(page: string, id: string): string[] {
  const row = new RegExp(`<tr data-worker="${id}">([\\s\\S]*?)</tr>`).exec(page)?.[1];
  if (row === undefined) return [];
  return [...row.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((m) =>
    m[1]!
      .replace(/<\/?(div|span)[^>]*>/g, ' ')
      .replace(/<[^>]+>/g, '')
      .replace(/\s+/g, ' ')
      .trim(),
  );
}

describe('the Workers page', () => {
  test('lists each live engine with what it serves and runs, leaves out the gone, and says when there is none', async () => {
    const f = (fixture = await startFixture());
    const now = f.clock.now();
    const row = (id: string, over: Partial<WorkerPresence>): WorkerPresence =>
      presence(id, now, { running: 5, runningJobIds: [f.ids.workflow, 'b', 'c', 'd'], state: 'stopping', ...over });
    await f.store.recordPresence(row('engine-other', {}));
    await f.store.recordPresence(row('engine-dead', { lastSeenAt: new Date(now.getTime() - 60_000), expiresAt: new Date(now.getTime() - 45_000) }));

    const v = new Visitor(f.url);
    const home = (await v.get('/loom/')).text;
    expect(home).toContain('<a href="/loom/workers">Workers</a>');
    const { res, text } = await v.get('/loom/workers');
    expect(res.status).toBe(200);
    expect(text).toContain('aria-current="page">Workers</a>');
    expect(text).toContain('2 live engines');
    expect(text).not.toContain('engine-dead');
    const mine = cells(text, 'fixture-engine');
    expect(mine).toEqual([
      'fixture-engine',
      expect.stringMatching(/ago$/),
      '0 / 10',
      'running',
      hostname(),
      String(process.pid),
      `Loom ${LOOM_VERSION} Node ${process.version}`,
      'emails, webhooks, fulfillment, reports, imports',
      expect.stringMatching(/ago$/),
    ]);
    expect(cells(text, 'engine-other')).toEqual([
      'engine-other',
      '4.00 s ago',
      '5 / 4 : …' + f.ids.workflow.slice(-8) + ' b c +2 more',
      'stopping',
      'web-2',
      '77',
      'Loom 0.1.0 Node v22.1.0',
      'emails',
      '1 h 0 min ago',
    ]);
    expect(text).toContain(`href="/loom/jobs/${f.ids.workflow}"`);
    expect(text).toContain('href="/loom/jobs?queue=webhooks"');

    await f.t.stop(); // a clean stop deletes the engine's row
    await f.store.removePresence('engine-other');
    const empty = (await v.get('/loom/workers')).text;
    expect(empty).toContain('0 live engines');
    expect(empty).toContain('<p class="empty">No live engines: none sharing this store has recorded its presence in its last few beats.');
  });

  test('updates in place in Chromium when an engine starts', async () => {
    const f = (fixture = await startFixture());
    const browser = await launchChromium();
    try {
      const { page, problems } = await watchedPage(browser);
      await page.goto(`${f.url}/loom/workers`);
      await page.waitForSelector('#live-status[data-state="on"]');
      await page.evaluate(() => {
        (globalThis as { __sameDocument?: boolean }).__sameDocument = true;
      });
      await f.store.recordPresence(presence('engine-new', f.clock.now()));
      await page.waitForSelector('tr[data-worker="engine-new"]');
      expect(await page.evaluate(() => (globalThis as { __sameDocument?: boolean }).__sameDocument)).toBe(true);
      await page.close();
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
