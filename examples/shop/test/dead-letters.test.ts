import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';
import { WebhookClient } from '../src/webhooks/webhook-client.js';
import { anOrder, startShop, waitForStatus } from './shop-harness.js';

let mongo: TestMongo;
beforeAll(async () => {
  mongo = await startTestMongo();
});
afterAll(() => mongo.stop());

const DOWN = 'https://hooks.example/down';

describe('FlakyWebhook: retries with backoff, dead letter, retry endpoint', () => {
  it('retries a refused webhook with growing delays, then parks it in the dead letters', async () => {
    const shop = await startShop(mongo);
    try {
      const res = await shop.post('/orders', anOrder('w-1', { webhookUrl: DOWN }));
      const id: string = res.body.jobs.flakyWebhook;
      await shop.until('the first webhook attempt to fail', async () => (await shop.job(id))?.errors.length === 1);

      // Retry-After is 1s: the retries come 1s, 2s and 4s after each failure, and not before.
      await shop.t.advance('999ms');
      expect((await shop.job(id))?.errors).toHaveLength(1);
      await shop.t.advance('1ms');
      await shop.until('the second attempt to fail', async () => (await shop.job(id))?.errors.length === 2);
      await shop.t.advance('2s');
      await shop.until('the third attempt to fail', async () => (await shop.job(id))?.errors.length === 3);
      await shop.t.advance('4s');
      const dead = await waitForStatus(shop, id, 'dead');

      expect(dead.errors.map((e) => e.at.getTime() - dead.errors[0]!.at.getTime())).toEqual([0, 1000, 3000, 7000]);
      expect(dead.errors[3]!.message).toContain('answered 503');
      // The reason says what happened and that retries are over, not that more are coming.
      expect(dead.deadReason).toMatch(/^POST \S+ answered 503 \(Retry-After 1000 ms\) \(failed 4 of 4 attempts\)$/);
      const letters = await shop.get('/dead-letters');
      expect(letters.status).toBe(200);
      expect(letters.body).toEqual([expect.objectContaining({ id, name: 'flaky-webhook', attempts: 4, payload: { orderId: 'w-1', url: DOWN } })]);
      expect((await shop.get(`/jobs/${id}`)).body).toMatchObject({ id, status: 'dead' });
    } finally {
      await shop.app.stop();
    }
  });

  it('puts a dead webhook back in the queue through POST /dead-letters/:id/retry; it runs again and completes', async () => {
    const shop = await startShop(mongo);
    try {
      const res = await shop.post('/orders', anOrder('w-2', { webhookUrl: DOWN }));
      const id: string = res.body.jobs.flakyWebhook;
      await shop.until('the first webhook attempt to fail', async () => (await shop.job(id))?.errors.length === 1);
      await shop.t.advance('7s');
      await waitForStatus(shop, id, 'dead');

      shop.app.container.get(WebhookClient).recover(DOWN);
      const retried = await shop.post(`/dead-letters/${id}/retry`);
      expect(retried).toEqual({ status: 202, body: { jobId: id } });
      const done = await waitForStatus(shop, id, 'completed');
      expect(done.attempt).toBe(1);
      expect(shop.app.container.get(WebhookClient).delivered).toEqual([{ url: DOWN, eventId: 'order.placed:w-2' }]);
      expect((await shop.get('/dead-letters')).body).toEqual([]);
      expect((await shop.post(`/dead-letters/${id}/retry`)).status).toBe(404);
    } finally {
      await shop.app.stop();
    }
  });

  it('reports the dead letter in GET /stats and answers 404 for an unknown job', async () => {
    const shop = await startShop(mongo);
    try {
      const res = await shop.post('/orders', anOrder('w-3', { webhookUrl: DOWN }));
      await shop.until('the first webhook attempt to fail', async () => (await shop.job(res.body.jobs.flakyWebhook))?.errors.length === 1);
      await shop.t.advance('7s');
      await waitForStatus(shop, res.body.jobs.flakyWebhook, 'dead');
      expect((await shop.get('/stats')).body).toMatchObject({ deadLetters: 1, concurrency: 10 });
      expect((await shop.get('/jobs/000000000000000000000000')).status).toBe(404);
    } finally {
      await shop.app.stop();
    }
  });
});
