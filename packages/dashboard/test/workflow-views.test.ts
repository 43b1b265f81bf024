import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import type { Browser, Page } from 'puppeteer-core';
import { duration } from '../src/html/format.js';
import { launchChromium, watchedPage, type PageElement } from './chromium.js';
import { SendReceipt, startFixture, type DashboardFixture } from './fixture.js';

// Issue 34, items 6 (the workflow timeline) and 2 (why a job waits), in Chromium.
let browser: Browser;
let f: DashboardFixture;
let page: Page;
let problems: string[];
let ids: NonNullable<DashboardFixture['workflows']>;

beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

async function open(): Promise<void> {
  f = await startFixture({ workflows: true });
  ids = f.workflows!;
  ({ page, problems } = await watchedPage(browser));
}

afterEach(async () => {
  await page?.close();
  await f?.close();
  expect(problems).toEqual([]);
});

const text = (selector: string) => page.$eval(selector, (el: PageElement) => (el.textContent ?? '').replace(/\s+/g, ' ').trim());
/** The cells of a step's row in the steps table: Step, Kind, Status, Recorded, Took, Wakes, Result. */
const stepCells = (name: string) =>
  page.$$eval(`tr[data-step="${name}"] td`, (els: PageElement[]) => els.map((e) => (e.textContent ?? '').replace(/\s+/g, ' ').trim()));

describe('workflow timeline', () => {
  test("a dead job's failing step shows as failed, not pending", async () => {
    await open();
    await page.goto(`${f.url}/loom/jobs/${ids.failed}`);
    expect(await text('#job-summary .badge')).toBe('dead');
    const [, kind, status, , , wakes, result] = await stepCells('charge');
    expect([kind, status, wakes]).toEqual(['step', 'failed', '']);
    expect(result).toContain('Error: card declined');
    expect(await page.$eval('svg.timeline rect.step-bar[data-step="charge"]', (el: PageElement) => el.getAttribute('class'))).toContain('step-failed');
  });

  test('a completed wait shows no wake time (its timeout is not a wake-up)', async () => {
    await open();
    await page.goto(`${f.url}/loom/jobs/${ids.awaited}`);
    expect(await text('#job-summary .badge')).toBe('completed');
    const [, kind, status, , , wakes] = await stepCells('receipt-sent');
    expect([kind, status, wakes]).toEqual(['wait', 'completed', '']);
  });

  test('a pending sleep says how long it has slept so far, not how long the run took to reach it', async () => {
    await open();
    const job = (await f.store.getJob(ids.sleeping))!;
    const sleep = job.steps.find((s) => s.name === 'cool-down')!;
    expect(sleep.status).toBe('pending');
    await page.goto(`${f.url}/loom/jobs/${ids.sleeping}`);
    // Stored queued (due at its wake time), counted with the waiting jobs: its badge says sleeping.
    expect(job.status).toBe('queued');
    expect(await text('#job-summary .badge')).toBe('sleeping');
    await page.goto(`${f.url}/loom/jobs?name=${encodeURIComponent(job.name)}`);
    expect(await text(`tr[data-job="${job.id}"] .badge`)).toBe('sleeping');
    await page.goto(`${f.url}/loom/jobs/${ids.sleeping}`);
    const [, kind, status, , took, wakes] = await stepCells('cool-down');
    expect([kind, status]).toEqual(['sleep', 'sleeping']);
    expect(took).toBe(`${duration(f.clock.now().getTime() - sleep.at.getTime())} so far`);
    expect(wakes).toBe(`in ${duration(sleep.wakeAt!.getTime() - f.clock.now().getTime())}`);
  });

  test('short steps beside a 30-minute sleep stay visible', async () => {
    await open();
    await page.goto(`${f.url}/loom/jobs/${ids.finished}`);
    expect(await text('#job-summary .badge')).toBe('completed');
    const bars = await page.$$eval('svg.timeline rect.step-bar', (els: PageElement[]) =>
      els.map((e) => ({ step: e.getAttribute('data-step'), width: Number(e.getAttribute('width')) })),
    );
    expect(bars.map((b) => b.step)).toEqual(['download', 'parse', 'cool-down', 'publish']);
    // Every bar at least 3% of the 960-unit drawing, and the sleep still the longest by far.
    for (const bar of bars) expect(bar.width).toBeGreaterThanOrEqual(28);
    const sleep = bars[2]!.width;
    for (const bar of [bars[0]!, bars[1]!, bars[3]!]) expect(sleep).toBeGreaterThan(bar.width * 4);
  });
});

describe('why a job waits', () => {
  test('a sleeping workflow says until when, on its page and in the list', async () => {
    await open();
    const wakeAt = (await f.store.getJob(ids.sleeping))!.steps.find((s) => s.name === 'cool-down')!.wakeAt!;
    const wakes = `in ${duration(wakeAt.getTime() - f.clock.now().getTime())}`;
    await page.goto(`${f.url}/loom/jobs/${ids.sleeping}`);
    expect(await text('#job-summary [data-test="state"]')).toBe(`sleeping in "cool-down", wakes ${wakes}`);
    await page.goto(`${f.url}/loom/jobs?queue=workflows`);
    expect(await text(`tr[data-job="${ids.sleeping}"] [data-test="state"]`)).toBe(`sleeping, wakes ${wakes}`);
  });

  test('the overview counts sleeping workflows as waiting, and says how many sleep', async () => {
    await open();
    await page.goto(`${f.url}/loom/`);
    const counts = (await f.store.listQueues(f.clock.now())).find((q) => q.name === 'workflows')!;
    expect(counts).toMatchObject({ sleeping: 1, counts: { waiting: 1 } });
    const cells = await page.$$eval('tr[data-queue="workflows"] td', (tds: PageElement[]) => tds.map((td) => td.textContent ?? ''));
    expect(cells[4]).toBe('2' + '1 asleep'); // waiting: the signal wait and the sleeper
    expect(cells[2]).toBe(String(counts.counts.queued - 1));
    // Over every queue: the fulfillment order sleeps too.
    const asleep = (await f.store.listQueues(f.clock.now())).reduce((n, q) => n + q.sleeping!, 0);
    expect(asleep).toBe(2);
    expect(await text('.status-card.status-waiting .card-note')).toBe('2 asleep');
  });

  test('the flow page shows each limit with its use, and what is full', async () => {
    await open();
    await page.goto(`${f.url}/loom/flow`);
    expect(await f.t.loom.queues.flow()).toEqual([{ name: 'sync-crm', kind: 'rateLimit', limit: 1, perMs: 3_600_000, used: 1 }]);
    const cells = await page.$$eval('tr[data-flow="sync-crm"] td', (tds: PageElement[]) => tds.map((td) => (td.textContent ?? '').trim().replace(/\s+/g, ' ')));
    expect(cells).toEqual(['sync-crm', 'rate limit', 'whole name', '1 / 1 started — full', 'per 1 h 0 min', '']);
  });

  test('a job waiting for a signal or a child says so', async () => {
    await open();
    await page.goto(`${f.url}/loom/jobs/${ids.approval}`);
    expect(await text('#job-summary [data-test="state"]')).toBe('waiting for signal "approval"');
    await page.goto(`${f.url}/loom/jobs?queue=workflows&status=waiting`);
    expect(await text(`tr[data-job="${ids.approval}"] [data-test="state"]`)).toBe('waiting for a signal, a child job or its dependencies');
  });

  test('a due job held by a paused queue or a rate limit says what holds it', async () => {
    await open();
    await page.goto(`${f.url}/loom/jobs/${ids.rateLimited}`);
    expect(await text('#job-summary [data-test="state"]')).toBe('held by the rate limit of sync-crm');
    await page.goto(`${f.url}/loom/jobs?queue=crm&status=queued`);
    expect(await text(`tr[data-job="${ids.rateLimited}"] [data-test="state"]`)).toBe('held by rate limit');

    await f.t.loom.queues.pause('emails');
    const { id } = await f.t.enqueue(SendReceipt, { orderId: 'o-held', email: 'held@example.com' });
    await f.t.runUntilIdle();
    await page.goto(`${f.url}/loom/jobs/${id}`);
    expect(await text('#job-summary [data-test="state"]')).toBe('held: queue emails is paused');
    await page.goto(`${f.url}/loom/jobs?queue=emails&status=queued`);
    expect(await text(`tr[data-job="${id}"] [data-test="state"]`)).toBe('held: queue paused');
  });
});
