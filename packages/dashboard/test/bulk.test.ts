import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import type { Browser, Page } from 'puppeteer-core';
import { launchChromium, screenshot, watchedPage, type PageElement } from './chromium.js';
import { startFixture, type DashboardFixture } from './fixture.js';
import { Visitor } from './http-client.js';

// Issue 34, item 5: bulk actions on the job list, in Chromium: tick rows (or the whole page) and
// cancel, retry, run now or remove them; or act on every job matching the filter after a
// confirmation page with the dry run's counts. Screenshots of the bar at 1280 and 390 px.
let browser: Browser;
let f: DashboardFixture;
let page: Page;
let problems: string[];

beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

async function open(): Promise<void> {
  f = await startFixture();
  ({ page, problems } = await watchedPage(browser));
}

afterEach(async () => {
  await page?.close();
  await f?.close();
  expect(problems).toEqual([]);
});

const text = (selector: string) => page.$eval(selector, (el: PageElement) => el.textContent ?? '');

async function click(selector: string): Promise<void> {
  await Promise.all([page.waitForNavigation(), page.click(selector)]);
}

/** Ticks the rows of these jobs. */
async function tick(ids: string[]): Promise<void> {
  for (const id of ids) await page.click(`tr[data-job="${id}"] input[data-select]`);
}

async function statusOf(id: string): Promise<string | undefined> {
  return (await f.store.getJob(id))?.status;
}

describe('bulk actions on the job list', () => {
  test.each([1280, 390])('the bar and the row boxes fit %i px (screenshot)', async (width) => {
    await open();
    await page.setViewport({ width, height: 800 });
    await page.goto(`${f.url}/loom/jobs`);
    expect(await page.$$eval('tr[data-job] input[data-select]', (els) => els.length)).toBe(9);
    await tick([f.ids.dead[0]!, f.ids.dead[1]!]);
    expect(await text('[data-test="selected-count"]')).toBe('2 selected');
    await page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
    await screenshot(page, `jobs-bulk-${width}`);
    const scrollWidth = await page.evaluate(
      () => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth,
    );
    expect(scrollWidth).toBe(width);
  });

  test('retry the rows ticked with "select all on this page"', async () => {
    await open();
    await page.goto(`${f.url}/loom/jobs?status=dead`);
    expect(await page.$eval('[data-test="bulk-bar"]', (el: PageElement) => el.textContent ?? '')).toContain('All 2 matching this filter');
    await page.click('[data-test="select-all"]');
    expect(await text('[data-test="selected-count"]')).toBe('2 selected');
    await click('[data-test="bulk-retry"]');
    expect(await text('.flash')).toBe('Retried 2 of 2 selected jobs.');
    expect(await Promise.all(f.ids.dead.map(statusOf))).toEqual(['queued', 'queued']);
  });

  test('cancel and run now the ticked rows; what cannot change is counted as skipped', async () => {
    await open();
    const later = (await f.t.jobs.list({ payload: { orderId: 'o-later' } })).jobs[0]!.id;
    await page.goto(`${f.url}/loom/jobs`);
    await tick([later, f.ids.completed]);
    await click('[data-test="bulk-run-now"]');
    expect(await text('.flash')).toBe('Made due now 1 of 2 selected jobs. Skipped 1: completed: run now applies to queued (1).');
    expect((await f.store.getJob(later))!.runAt).toEqual(f.clock.now());
    await tick([f.ids.dead[0]!, f.ids.workflow]);
    await click('[data-test="bulk-cancel"]');
    expect(await text('.flash')).toMatch(/^Cancelled 1 of 2 selected jobs\. Skipped 1: dead: cancel applies to queued, running, waiting \(1\)\.$/);
    expect(await statusOf(f.ids.workflow)).toBe('cancelled');
  });

  test('remove every job matching the filter, after a confirmation page with the counts', async () => {
    await open();
    await page.goto(`${f.url}/loom/jobs?status=completed&queue=emails`);
    const before = await page.$$eval('tr[data-job]', (els: PageElement[]) => els.map((e) => e.getAttribute('data-job')!));
    expect(before.length).toBeGreaterThan(0);
    await page.click('[data-test="scope-matching"]');
    await click('[data-test="bulk-remove"]');
    expect(await text('h1')).toBe('Remove: every matching job');
    expect(await text('[data-test="bulk-preview"]')).toBe(`Would remove ${before.length} of ${before.length} jobs matching the filter.`);
    expect(await Promise.all(before.map(statusOf))).toEqual(before.map(() => 'completed'));
    await screenshot(page, 'jobs-bulk-confirm');
    await click('[data-test="confirm-bulk"]');
    expect(await text('.flash')).toBe(`Removed ${before.length} of ${before.length} jobs matching the filter.`);
    expect(await Promise.all(before.map(statusOf))).toEqual(before.map(() => undefined));
    expect(page.url()).toBe(`${f.url}/loom/jobs?status=completed&queue=emails`);
  });

  test('bulk posts are refused without the CSRF token, from another origin, and with nothing selected', async () => {
    await open();
    const visitor = new Visitor(f.url);
    await visitor.page('/loom/jobs');
    const forged = await visitor.post('/loom/actions/jobs/bulk', { _csrf: 'forged', action: 'cancel', scope: 'matching', confirm: 'yes' });
    expect(forged.status).toBe(403);
    const evil = await new Visitor(f.url, { origin: 'https://evil.example' }).post('/loom/actions/jobs/bulk', {
      action: 'cancel',
      scope: 'matching',
      confirm: 'yes',
    });
    expect(evil.status).toBe(403);
    expect(await visitor.post('/loom/actions/jobs/bulk', { action: 'cancel', scope: 'selected' })).toMatchObject({ status: 400 });
    expect(await visitor.post('/loom/actions/jobs/bulk', { action: 'explode', scope: 'selected', id: f.ids.workflow })).toMatchObject({ status: 400 });
    expect(await visitor.post('/loom/actions/jobs/bulk', { action: 'cancel', scope: 'matching', status: 'nope', confirm: 'yes' })).toMatchObject({
      status: 400,
    });
    expect(await visitor.post('/loom/actions/jobs/bulk', { action: 'cancel', scope: 'matching', name: '{"$ne":null}', confirm: 'yes' })).toMatchObject({
      status: 303,
    });
    // The name above is a plain string that names no job: nothing was cancelled.
    expect(await statusOf(f.ids.workflow)).not.toBe('cancelled');
  });
});
