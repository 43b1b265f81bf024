import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import type { Browser, Page } from 'puppeteer-core';
import { launchChromium, screenshot, watchedPage, type PageElement } from './chromium.js';
import { SendReceipt, startFixture, type DashboardFixture } from './fixture.js';

// One Chromium for the file; each test gets a fresh store, dashboard and tab.
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

async function open(options: Parameters<typeof startFixture>[0] = {}): Promise<void> {
  f = await startFixture(options);
  ({ page, problems } = await watchedPage(browser));
}

afterEach(async () => {
  await page?.close();
  await f?.close();
  // No console error, failed request or CSP violation on any page a test visited.
  expect(problems).toEqual([]);
});

const text = (selector: string) => page.$eval(selector, (el: PageElement) => el.textContent ?? '');
const rows = (selector = 'tr[data-job]') => page.$$eval(selector, (els) => els.length);

async function click(selector: string): Promise<void> {
  await Promise.all([page.waitForNavigation(), page.click(selector)]);
}

describe('dashboard in Chromium', () => {
  test('every view renders the demo store (screenshots in test-artifacts/dashboard)', async () => {
    await open();
    await page.goto(`${f.url}/loom/`);
    expect(await page.$$eval('tr[data-queue]', (els: PageElement[]) => els.map((e) => e.getAttribute('data-queue')))).toEqual([
      'emails',
      'fulfillment',
      'webhooks',
    ]);
    expect(await text('.status-card.status-dead .card-n')).toBe('2');
    await page.waitForSelector('#live-status[data-state="on"]');
    await screenshot(page, 'queues');

    await page.goto(`${f.url}/loom/jobs`);
    expect(await rows()).toBe(9);
    await screenshot(page, 'jobs');

    await page.goto(`${f.url}/loom/jobs?status=dead`);
    expect(await rows()).toBe(2);
    expect(await text('h1')).toBe('Dead letters');
    await screenshot(page, 'dead-letters');

    await page.goto(`${f.url}/loom/jobs/${f.ids.workflow}`);
    expect(await page.$$eval('tr[data-step]', (els: PageElement[]) => els.map((e) => e.getAttribute('data-step')))).toEqual([
      'reserve-stock',
      'charge <card>',
      'enqueue:send-receipt#1',
      'wait-for-pickup',
    ]);
    expect(await page.$$eval('svg.timeline rect.step-bar', (els) => els.length)).toBe(4);
    await screenshot(page, 'job');

    await page.goto(`${f.url}/loom/schedules`);
    expect(await text('tr[data-schedule="nightly-report"]')).toContain('0 3 * * *');
    await screenshot(page, 'schedules');
  });

  test('the overview charts the last hour: completions and deaths per 5 minutes', async () => {
    await open({ history: true });
    await page.goto(`${f.url}/loom/`);
    // Buckets 11:05 … 12:00 (the one now is in): the imports of 11:05-11:55 (87 completed, 5 dead)
    // and the demo's jobs at 12:00 (5 receipts completed, 2 webhooks dead).
    expect(await text('[data-test="completed-total"]')).toBe('92');
    expect(await text('[data-test="dead-total"]')).toBe('7');
    expect(await page.$$eval('#throughput rect.bar-dead', (els) => els.length)).toBe(3);
    expect(await page.$$eval('#throughput rect.bar-ok', (els) => els.length)).toBe(12);
    await screenshot(page, 'queues-chart');
  });

  test('a job whose payload and error hold <script> shows them as text and runs nothing', async () => {
    await open();
    await page.goto(`${f.url}/loom/jobs/${f.ids.scriptPayload}`);
    expect(await text('[data-test="payload"]')).toContain('"email": "<script>window.__pwned = true</script><img src=x onerror=\\"window.__pwned = true\\">"');
    await page.goto(`${f.url}/loom/jobs/${f.ids.dead[0]}`);
    expect(await text('.attempt .error-text')).toBe('Error: <b>502</b> from https://hooks.example/down: <script>window.__pwned = true</script>');
    await page.goto(`${f.url}/loom/jobs?status=dead`);
    expect(await page.evaluate(() => (globalThis as { __pwned?: boolean }).__pwned)).toBeUndefined();
    expect(await page.$$eval('main script, main img, main b', (els) => els.length)).toBe(0);
    await screenshot(page, 'escaped-error');
  });

  test('retry all from the dead-letter page puts every dead letter back in its queue', async () => {
    await open();
    await page.goto(`${f.url}/loom/jobs?status=dead`);
    await click('[data-test="retry-all"]');
    expect(await text('.flash')).toBe('2 dead letters queued again.');
    expect(await rows()).toBe(0);
    expect((await f.store.listQueues()).find((q) => q.name === 'webhooks')!.counts).toMatchObject({ dead: 0, queued: 2 });
  });

  test('purge asks for confirmation first, then deletes', async () => {
    await open();
    await page.goto(`${f.url}/loom/jobs?status=dead`);
    await click('[data-test="purge"]');
    expect(await text('main')).toContain('2 of them');
    expect((await f.store.listQueues()).find((q) => q.name === 'webhooks')!.counts.dead).toBe(2);
    await screenshot(page, 'purge-confirmation');
    await click('[data-test="confirm-purge"]');
    expect(await text('.flash')).toBe('2 dead letters deleted.');
    expect((await f.store.listQueues()).find((q) => q.name === 'webhooks')?.counts.dead ?? 0).toBe(0);
  });

  test('pause and resume a queue from the overview', async () => {
    await open();
    await page.goto(`${f.url}/loom/`);
    await click('tr[data-queue="emails"] [data-test="pause-queue"]');
    expect(await text('tr[data-queue="emails"] .badge')).toBe('paused');
    expect(await f.store.pausedQueues()).toEqual(['emails']);
    await click('tr[data-queue="emails"] [data-test="resume-queue"]');
    expect(await text('tr[data-queue="emails"] .badge')).toBe('active');
    expect(await f.store.pausedQueues()).toEqual([]);
  });

  test('live updates: a new job and a retried one show up without a reload', async () => {
    await open();
    await page.goto(`${f.url}/loom/jobs`);
    await page.waitForSelector('#live-status[data-state="on"]');
    await page.evaluate(() => {
      (globalThis as { __sameDocument?: boolean }).__sameDocument = true;
    });
    const { id } = await f.t.enqueue(SendReceipt, { orderId: 'live-1', email: 'live@example.com' }, { delay: '1h' });
    await page.waitForSelector(`tr[data-job="${id}"]`);
    expect(await rows()).toBe(10);

    await page.goto(`${f.url}/loom/jobs/${f.ids.dead[1]}`);
    await page.waitForSelector('#live-status[data-state="on"]');
    await page.evaluate(() => {
      (globalThis as { __sameDocument?: boolean }).__sameDocument = true;
    });
    expect(await text('#job-summary .badge')).toBe('dead');
    await f.store.retryJob(f.ids.dead[1]!, f.clock.now());
    await page.waitForFunction(
      () =>
        (globalThis as unknown as { document: { querySelector(s: string): PageElement | null } }).document.querySelector('#job-summary .badge')?.textContent ===
        'queued',
    );
    expect(await page.evaluate(() => (globalThis as { __sameDocument?: boolean }).__sameDocument)).toBe(true);
  });

  test('a batch page: counts, a full progress bar, failed members and callbacks that link to their jobs', async () => {
    await open({ flows: true });
    const { batch, failedMember, members } = f.flows!;
    await page.goto(`${f.url}/loom/jobs/${members[0]}`);
    await click('a[data-test="batch"]');
    expect(await text('h1')).toContain(batch);
    expect(await page.$eval('#batch-summary progress', (el: PageElement) => el.getAttribute('value'))).toBe('100');
    expect(await text('[data-count="dead"]')).toBe('1');
    expect(await page.$$eval('tr[data-callback]', (els: PageElement[]) => els.map((e) => e.getAttribute('data-callback')))).toEqual(['complete', 'failure']);
    await screenshot(page, 'batch');
    await click(`#batch-failed a[href$="${failedMember}"]`);
    expect(await text('#job-summary .badge')).toBe('dead');
  });

  test('cancel with "also cancel its children and dependents" ticked cancels the dependents too', async () => {
    await open({ flows: true });
    page.on('dialog', (dialog) => void dialog.accept());
    const { unmet, report } = f.flows!;
    await page.goto(`${f.url}/loom/jobs/${unmet}`);
    expect(await rows('#job-dependents tr[data-job]')).toBe(1);
    await page.waitForSelector('#live-status[data-state="on"]');
    await page.click('[data-test="cancel-children"]');
    // A live update of the job (a signal, and a new dependent) keeps the box ticked.
    const before = await page.evaluate(() => (globalThis as unknown as { document: { body: PageElement } }).document.body.getAttribute('data-updates'));
    await f.t.enqueue(SendReceipt, { orderId: 'o-late', email: 'late@example.com' }, { dependsOn: [unmet] });
    f.clock.advance(1000);
    expect(await f.store.signal(unmet, { name: 'poke', data: null, now: f.clock.now() })).toBe(true);
    await f.dashboard.refresh();
    await page.waitForFunction(
      (was: string | null) => (globalThis as unknown as { document: { body: PageElement } }).document.body.getAttribute('data-updates') !== was,
      {},
      before,
    );
    expect(await rows('#job-dependents tr[data-job]')).toBe(2);
    expect(await page.$eval('[data-test="cancel-children"]', (el: PageElement) => (el as unknown as { checked: boolean }).checked)).toBe(true);
    // Wait for the POST and the page it leads to, not for any navigation: a live update arriving
    // late on a loaded machine may redraw the page first.
    await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith(`/actions/jobs/${unmet}/cancel`)),
      page.click('[data-test="cancel-job"]'),
    ]);
    await page.waitForSelector('.flash');
    expect(await text('.flash')).toBe(`Job ${unmet} is cancelled. 2 children and dependents were cancelled too (running ones stop within one heartbeat).`);
    expect((await f.store.getJob(unmet))!.status).toBe('cancelled');
    expect((await f.store.getJob(report))!.status).toBe('cancelled');
    expect(await page.$$eval('#job-dependents tr[data-job] .badge', (els: PageElement[]) => els.map((e) => e.textContent))).toEqual(['cancelled', 'cancelled']);
  });

  test('the time toggle shows times in UTC or local time, keeps the choice across a reload and a live update', async () => {
    await open();
    await page.emulateTimezone('Asia/Kolkata'); // UTC+05:30, so local and UTC differ
    const id = f.ids.dead[1]!;
    const created = `#job-summary time[datetime="${(await f.store.getJob(id))!.createdAt.toISOString()}"]`;
    await page.goto(`${f.url}/loom/jobs/${id}`);
    await page.waitForSelector('#live-status[data-state="on"]');
    expect(await text(created)).toMatch(/ ago$/);
    await page.click('[data-time-mode="utc"]');
    expect(await text(created)).toBe('2026-03-10 12:00:00 UTC');
    await page.click('[data-time-mode="local"]');
    expect(await text(created)).toBe('2026-03-10 17:30:00');
    expect(await page.$eval(created, (el: PageElement) => el.getAttribute('title'))).toMatch(/^2026-03-10 17:30:00 UTC\+05:30 · .* ago$/);
    await page.reload();
    expect(await page.$eval('[data-time-mode="local"]', (el: PageElement) => el.getAttribute('aria-pressed'))).toBe('true');
    expect(await text(created)).toBe('2026-03-10 17:30:00');
    // A live update redraws the summary; its times come back in local time.
    await page.waitForSelector('#live-status[data-state="on"]');
    await f.store.retryJob(id, f.clock.now());
    await page.waitForFunction(
      () =>
        (globalThis as unknown as { document: { querySelector(s: string): PageElement | null } }).document.querySelector('#job-summary .badge')?.textContent ===
        'queued',
    );
    expect(await text(created)).toBe('2026-03-10 17:30:00');
    await screenshot(page, 'job-local-times');
    await page.click('[data-time-mode="relative"]');
    expect(await text(created)).toMatch(/ ago$/);
  });
});
