import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import type { Browser, Page } from 'puppeteer-core';
import { axeProblems, launchChromium, screenshot, watchedPage } from './chromium.js';
import { startFixture, type DashboardFixture } from './fixture.js';

// Issue 34, item 8: every page at 1280 and 390 px wide, no horizontal overflow of the page, no
// serious or critical axe-core violation; screenshots of each for a reviewer (test-artifacts/).
const WIDTHS = [1280, 390] as const;

let browser: Browser;
let f: DashboardFixture;
let page: Page;
let problems: string[];

beforeAll(async () => {
  browser = await launchChromium();
  f = await startFixture({ workflows: true, flows: true });
});
afterAll(async () => {
  await f?.close();
  await browser?.close();
});
afterEach(async () => {
  await page?.close();
  expect(problems).toEqual([]);
});

/** How many entries {@link pages} has (the tests are made before the fixture exists). */
const PAGE_COUNT = 21;

/** Every kind of page the dashboard has, by name (the screenshot's) and path. */
function pages(): [string, string][] {
  const w = f.workflows!;
  return [
    ['queues', '/loom/'],
    ['jobs', '/loom/jobs'],
    ['dead-letters', '/loom/jobs?status=dead'],
    ['job-workflow', `/loom/jobs/${f.ids.workflow}`],
    ['job-dead', `/loom/jobs/${f.ids.dead[0]}`],
    ['job-failed-step', `/loom/jobs/${w.failed}`],
    ['job-sleeping', `/loom/jobs/${w.sleeping}`],
    ['job-finished-workflow', `/loom/jobs/${w.finished}`],
    ['schedules', '/loom/schedules'],
    ['purge-confirmation', '/loom/dead-letters/purge'],
    ['not-found', '/loom/jobs/no-such-job'],
    ['jobs-search', `/loom/jobs?payload=${encodeURIComponent('orderId=o-1')}&key=`],
    ['flow', '/loom/flow'],
    ['job-wait-token', `/loom/jobs/${w.review}`],
    ['workers', '/loom/workers'],
    ['job-dependencies', `/loom/jobs/${f.flows!.report}`],
    ['job-dependents', `/loom/jobs/${f.flows!.met}`],
    ['batch', `/loom/batches/${f.flows!.batch}`],
    ['job-batch-member', `/loom/jobs/${f.flows!.members[0]}`],
    ['queue-charts-24h', '/loom/queues/emails'],
    ['queue-charts-7d', '/loom/queues/webhooks?range=7d'],
  ];
}

describe.each(WIDTHS)('at %i px wide', (width) => {
  test.each(Array.from({ length: PAGE_COUNT }, (_, i) => i))('page %i fits the width and passes axe-core', async (i) => {
    ({ page, problems } = await watchedPage(browser));
    await page.setViewport({ width, height: 800 });
    expect(pages()).toHaveLength(PAGE_COUNT);
    const [name, path] = pages()[i]!;
    const res = await page.goto(`${f.url}${path}`);
    expect(res?.status()).toBe(name === 'not-found' ? 404 : 200);
    // Chromium logs the 404 of the not-found page itself; nothing else may fail.
    if (name === 'not-found') problems.splice(0, problems.length, ...problems.filter((p) => !p.includes('status of 404')));
    await screenshot(page, `${name}-${width}`);
    const scrollWidth = await page.evaluate(
      () => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth,
    );
    expect({ name, scrollWidth }).toEqual({ name, scrollWidth: width });
    expect({ name, violations: await axeProblems(page) }).toEqual({ name, violations: [] });
  });
});
