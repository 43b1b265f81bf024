import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser } from 'puppeteer-core';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';
import { launchChromium, screenshot, watchedPage, type PageElement } from '../../../packages/dashboard/test/chromium.js';
import { WebhookClient } from '../src/webhooks/webhook-client.js';
import { anOrder, startShop, waitForStatus } from './shop-harness.js';

let mongo: TestMongo;
let browser: Browser;
beforeAll(async () => {
  mongo = await startTestMongo();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await mongo?.stop();
});

const DOWN = 'https://hooks.example/down';

describe('the shop serves the Loom dashboard at /loom (MongoStore, Chromium)', () => {
  it('shows the shop queues and a dead webhook; its Retry button puts it back and it completes', async () => {
    const shop = await startShop(mongo);
    const { page, problems } = await watchedPage(browser);
    try {
      const res = await shop.post('/orders', anOrder('d-1', { webhookUrl: DOWN }));
      const id: string = res.body.jobs.flakyWebhook;
      await shop.until('the first webhook attempt to fail', async () => (await shop.job(id))?.errors.length === 1);
      await shop.t.advance('7s');
      await waitForStatus(shop, id, 'dead');

      await page.goto(shop.app.dashboardUrl);
      const queues = await page.$$eval('tr[data-queue]', (els: PageElement[]) => els.map((e) => e.getAttribute('data-queue')));
      expect(queues).toEqual(expect.arrayContaining(['emails', 'fulfillment', 'webhooks']));
      expect(await page.$eval('tr[data-queue="webhooks"]', (el: PageElement) => el.textContent)).toContain('1');
      await screenshot(page, 'shop-queues');

      await Promise.all([page.waitForNavigation(), page.click('a[href="/loom/jobs?status=dead"]')]);
      expect(await page.$$eval('tr[data-job]', (els: PageElement[]) => els.map((e) => e.getAttribute('data-job')))).toEqual([id]);
      expect(await page.$eval(`tr[data-job="${id}"] .reason`, (el: PageElement) => el.textContent)).toContain('503');
      await screenshot(page, 'shop-dead-letters');

      shop.app.container.get(WebhookClient).recover(DOWN);
      await Promise.all([page.waitForNavigation(), page.click(`tr[data-job="${id}"] [data-test="retry-job"]`)]);
      expect(await page.$eval('.flash', (el: PageElement) => el.textContent)).toBe(`Job ${id} is queued again.`);
      expect(page.url()).toBe(`${shop.app.dashboardUrl}/jobs?status=dead`);
      const done = await waitForStatus(shop, id, 'completed');
      expect(done.attempt).toBe(1);

      await page.goto(`${shop.app.dashboardUrl}/jobs/${id}`);
      expect(await page.$eval('#job-summary .badge', (el: PageElement) => el.textContent)).toBe('completed');
      await screenshot(page, 'shop-job');
      expect(problems).toEqual([]);
    } finally {
      await page.close();
      await shop.app.stop();
    }
  });
});
