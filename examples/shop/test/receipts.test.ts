import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';
import { SendReceipt } from '../src/jobs/send-receipt.js';
import type { Db } from 'mongodb';
import { FakeMailTransport } from '../src/mail/fake-mail-transport.js';
import type { Mail } from '../src/mail/mail-transport.js';
import { OutboxRepository } from '../src/outbox/outbox-repository.js';
import { ReceiptRepository } from '../src/receipts/receipt-repository.js';
import { TOKENS } from '../src/tokens.js';
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

/**
 * Records every `send()` the shop makes, also those the fake transport then drops as repeats of a
 * key (its `sent` list would hide them). Call it before the first order.
 */
function recordSends(shop: ShopUnderTest): Mail[] {
  const transport = shop.app.container.get(FakeMailTransport);
  const calls: Mail[] = [];
  const send = transport.send.bind(transport);
  transport.send = (mail) => {
    calls.push(mail);
    return send(mail);
  };
  return calls;
}

/**
 * What one receipt left behind, each counted by a field no unique index guards (the receipt's and
 * the outbox entry's `_id` are the receipt key, so counting by it could never exceed one): receipt
 * rows for the order, outbox entries to its address, relay jobs for its entry, and send() calls.
 */
async function receiptTrail(shop: ShopUnderTest, calls: readonly Mail[], orderId: string) {
  const db = shop.app.container.get<Db>(TOKENS.Db);
  const relays = await shop.app.store.listJobs({ name: 'relay-outbox' });
  return {
    receipts: await shop.app.container.get(ReceiptRepository).countForOrder(orderId),
    outboxEntries: await db.collection('outbox').countDocuments({ to: `${orderId}@example.com` }),
    relayJobs: relays.filter((j) => (j.payload as { outboxId?: string }).outboxId === `receipt:${orderId}`).length,
    sendCalls: calls.filter((m) => m.to === `${orderId}@example.com`).length,
    mailsSent: shop.app.container.get(FakeMailTransport).sent.filter((m) => m.to === `${orderId}@example.com`).length,
  };
}

const ONE_RECEIPT = { receipts: 1, outboxEntries: 1, relayJobs: 1, sendCalls: 1, mailsSent: 1 };

function sentTo(shop: ShopUnderTest, orderId: string) {
  return shop.app.container.get(FakeMailTransport).sent.filter((m) => m.idempotencyKey === `receipt:${orderId}`);
}

describe('POST /orders -> SendReceipt -> outbox -> mail', () => {
  it('stores the order, returns the receipt job id, and sends exactly one receipt', async () => {
    const shop = await startShop(mongo);
    const calls = recordSends(shop);
    try {
      const res = await shop.post('/orders', anOrder('o-1'));
      expect(res.status).toBe(202);
      expect(res.body).toMatchObject({ orderId: 'o-1', deduplicated: false });

      const job = await waitForStatus(shop, res.body.jobId, 'completed');
      expect(job.name).toBe('send-receipt');
      expect(job.idempotencyKey).toBe('receipt:o-1');
      await receiptDelivered(shop, 'o-1');
      expect(await receiptTrail(shop, calls, 'o-1')).toEqual(ONE_RECEIPT);
      expect(sentTo(shop, 'o-1')[0]).toMatchObject({ to: 'o-1@example.com', subject: 'Your receipt for order o-1' });
    } finally {
      await shop.app.stop();
    }
  });

  it('answers a repeated POST with the same job and still sends one receipt', async () => {
    const shop = await startShop(mongo);
    const calls = recordSends(shop);
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
      expect(await receiptTrail(shop, calls, 'o-2')).toEqual(ONE_RECEIPT);
    } finally {
      await shop.app.stop();
    }
  });

  it('makes two simultaneous POSTs of one order into one order and one receipt', async () => {
    const shop = await startShop(mongo);
    const calls = recordSends(shop);
    try {
      const [a, b] = await Promise.all([shop.post('/orders', anOrder('o-3')), shop.post('/orders', anOrder('o-3'))]);
      expect([a.status, b.status].sort()).toEqual([200, 202]);
      expect(a.body.jobId).toBe(b.body.jobId);
      await waitForStatus(shop, a.body.jobId, 'completed');
      await receiptDelivered(shop, 'o-3');
      expect(await receiptTrail(shop, calls, 'o-3')).toEqual(ONE_RECEIPT);
    } finally {
      await shop.app.stop();
    }
  });

  it('turns a second delivery of SendReceipt (at-least-once) into a no-op at the sink', async () => {
    const shop = await startShop(mongo);
    const calls = recordSends(shop);
    try {
      const res = await shop.post('/orders', anOrder('o-4'));
      await waitForStatus(shop, res.body.jobId, 'completed');
      await receiptDelivered(shop, 'o-4');

      // The same work delivered again under another job, as a redelivery after a crash would be.
      const again = await shop.app.loom.enqueue(SendReceipt, { orderId: 'o-4' }, { idempotencyKey: 'redelivery:o-4' });
      await waitForStatus(shop, again.id, 'completed');
      expect(shop.logs.entries.some((e) => e.msg === 'receipt receipt:o-4 already exists; nothing to do')).toBe(true);
      expect(await receiptTrail(shop, calls, 'o-4')).toEqual(ONE_RECEIPT);
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
