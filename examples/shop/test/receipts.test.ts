import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';
import { SendReceipt } from '../src/jobs/send-receipt.js';
import { FakeMailTransport } from '../src/mail/fake-mail-transport.js';
import { OutboxRepository } from '../src/outbox/outbox-repository.js';
import { ReceiptRepository } from '../src/receipts/receipt-repository.js';
import { anOrder, startShop, waitForStatus, type ShopUnderTest } from './shop-harness.js';

let mongo: TestMongo;
beforeAll(async () => {
  mongo = await startTestMongo();
});
afterAll(() => mongo.stop());

/** Waits until the order's receipt email went out through the outbox relay. */
async function receiptDelivered(shop: ShopUnderTest, orderId: string): Promise<void> {
  const outbox = shop.app.container.get(OutboxRepository);
  await shop.until(`the receipt of ${orderId} to be relayed`, async () => (await outbox.get(`receipt:${orderId}`))?.deliveredAt);
}

function sentTo(shop: ShopUnderTest, orderId: string) {
  return shop.app.container.get(FakeMailTransport).sent.filter((m) => m.idempotencyKey === `receipt:${orderId}`);
}

describe('POST /orders -> SendReceipt -> outbox -> mail', () => {
  it('stores the order, returns the receipt job id, and sends exactly one receipt', async () => {
    const shop = await startShop(mongo);
    try {
      const res = await shop.post('/orders', anOrder('o-1'));
      expect(res.status).toBe(202);
      expect(res.body).toMatchObject({ orderId: 'o-1', deduplicated: false });

      const job = await waitForStatus(shop, res.body.jobId, 'completed');
      expect(job.name).toBe('send-receipt');
      expect(job.idempotencyKey).toBe('receipt:o-1');
      await receiptDelivered(shop, 'o-1');
      expect(await shop.app.container.get(ReceiptRepository).countForOrder('o-1')).toBe(1);
      expect(sentTo(shop, 'o-1')).toHaveLength(1);
      expect(sentTo(shop, 'o-1')[0]).toMatchObject({ to: 'o-1@example.com', subject: 'Your receipt for order o-1' });
    } finally {
      await shop.app.stop();
    }
  });

  it('answers a repeated POST with the same job and still sends one receipt', async () => {
    const shop = await startShop(mongo);
    try {
      const first = await shop.post('/orders', anOrder('o-2'));
      const second = await shop.post('/orders', anOrder('o-2'));
      expect(first.status).toBe(202);
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({ orderId: 'o-2', jobId: first.body.jobId, deduplicated: true, jobs: first.body.jobs });

      await waitForStatus(shop, first.body.jobId, 'completed');
      await receiptDelivered(shop, 'o-2');
      const third = await shop.post('/orders', anOrder('o-2'));
      expect(third.body).toMatchObject({ jobId: first.body.jobId, deduplicated: true });
      expect(await shop.app.container.get(ReceiptRepository).countForOrder('o-2')).toBe(1);
      expect(sentTo(shop, 'o-2')).toHaveLength(1);
    } finally {
      await shop.app.stop();
    }
  });

  it('makes two simultaneous POSTs of one order into one order and one receipt', async () => {
    const shop = await startShop(mongo);
    try {
      const [a, b] = await Promise.all([shop.post('/orders', anOrder('o-3')), shop.post('/orders', anOrder('o-3'))]);
      expect([a.status, b.status].sort()).toEqual([200, 202]);
      expect(a.body.jobId).toBe(b.body.jobId);
      await waitForStatus(shop, a.body.jobId, 'completed');
      await receiptDelivered(shop, 'o-3');
      expect(await shop.app.container.get(ReceiptRepository).countForOrder('o-3')).toBe(1);
      expect(sentTo(shop, 'o-3')).toHaveLength(1);
    } finally {
      await shop.app.stop();
    }
  });

  it('turns a second delivery of SendReceipt (at-least-once) into a no-op at the sink', async () => {
    const shop = await startShop(mongo);
    try {
      const res = await shop.post('/orders', anOrder('o-4'));
      await waitForStatus(shop, res.body.jobId, 'completed');
      await receiptDelivered(shop, 'o-4');

      // The same work delivered again under another job, as a redelivery after a crash would be.
      const again = await shop.app.loom.enqueue(SendReceipt, { orderId: 'o-4' }, { idempotencyKey: 'redelivery:o-4' });
      await waitForStatus(shop, again.id, 'completed');
      expect(shop.logs.entries.some((e) => e.msg === 'receipt receipt:o-4 already exists; nothing to do')).toBe(true);
      expect(await shop.app.container.get(ReceiptRepository).countForOrder('o-4')).toBe(1);
      expect(sentTo(shop, 'o-4')).toHaveLength(1);
    } finally {
      await shop.app.stop();
    }
  });

  it('refuses a bad order with 400 naming the field, and stores nothing', async () => {
    const shop = await startShop(mongo);
    try {
      const res = await shop.post('/orders', anOrder('o-5', { email: 'not-an-email' }));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION');
      expect(res.body.error.details).toEqual([{ path: 'email', message: 'Invalid email address' }]);
      expect((await shop.get('/orders/o-5')).status).toBe(404);
      expect(await shop.app.loom.stats()).toMatchObject({ queues: {} });
    } finally {
      await shop.app.stop();
    }
  });
});
