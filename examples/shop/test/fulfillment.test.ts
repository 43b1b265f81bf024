import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';
import { Carrier } from '../src/fulfillment/carrier.js';
import { PaymentGateway } from '../src/fulfillment/payment-gateway.js';
import { anOrder, startShop, waitFor, waitForStatus } from './shop-harness.js';

let mongo: TestMongo;
beforeAll(async () => {
  mongo = await startTestMongo();
});
afterAll(() => mongo.stop());

/** A carrier whose API hangs until the call is aborted, to catch a job mid-run at shutdown. */
class HangingCarrier extends Carrier {
  override ship(_orderId: string, signal: AbortSignal): Promise<{ trackingNumber: string }> {
    return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('carrier call aborted')), { once: true }));
  }
}

describe('FulfillOrder: a workflow with steps and a durable sleep', () => {
  it('reserves and charges, sleeps until pickup without holding a worker, then ships when time has passed', async () => {
    const shop = await startShop(mongo);
    try {
      const res = await shop.post('/orders', anOrder('f-1'));
      const id: string = res.body.jobs.fulfillOrder;
      const sleeping = await shop.until('the workflow to sleep until pickup', async () => {
        const job = await shop.job(id);
        return job?.status === 'queued' && job.steps.some((s) => s.name === 'wait-for-pickup') ? job : undefined;
      });
      expect(sleeping.steps.map((s) => [s.name, s.status])).toEqual([
        ['reserve-stock', 'completed'],
        ['charge', 'completed'],
        ['mark-paid', 'completed'],
        ['wait-for-pickup', 'pending'],
      ]);
      expect(sleeping.runAt.toISOString()).toBe('2026-03-10T13:00:00.000Z');
      expect((await shop.get('/orders/f-1')).body.status).toBe('paid');
      // The sleep holds no worker: every run ends while the workflow still waits for pickup.
      await shop.until('every run to end', async () => (await shop.app.loom.stats()).inFlight === 0);
      expect((await shop.job(id))?.status).toBe('queued');

      await shop.t.advance('59m');
      expect((await shop.job(id))?.status).toBe('queued');
      await shop.t.advance('1m');
      const done = await waitForStatus(shop, id, 'completed');
      expect(done.result).toEqual({ trackingNumber: 'TRK-f-1-1' });
      expect((await shop.get('/orders/f-1')).body).toMatchObject({ status: 'shipped', trackingNumber: 'TRK-f-1-1' });
      expect(shop.app.container.get(PaymentGateway).chargeCount).toBe(1);
    } finally {
      await shop.app.stop();
    }
  });
});

describe('graceful stop', () => {
  it('logs the stop, releases a job still running at the end of the grace, and a restart finishes it without redoing its steps', async () => {
    const first = await startShop(mongo, { overrides: (c) => c.rebind(Carrier).to(HangingCarrier) });
    const database = first.app.config.database;
    const res = await first.post('/orders', anOrder('g-1'));
    const id: string = res.body.jobs.fulfillOrder;
    await first.until('the workflow to sleep until pickup', async () => (await first.job(id))?.steps.some((s) => s.name === 'wait-for-pickup'));
    await first.until('the other runs to end', async () => (await first.app.loom.stats()).inFlight === 0);
    await first.t.advance('1h');
    await first.until('the ship step to be in flight', async () => (await first.app.loom.stats()).inFlight === 1);
    expect(first.app.container.get(PaymentGateway).chargeCount).toBe(1);

    let stopped = false;
    const stopping = first.app.stop('SIGTERM received').then(() => {
      stopped = true;
    });
    // The grace (5s) runs on the FakeClock: move it along until the stop is done.
    await waitFor('the graceful stop to finish', () => {
      if (!stopped) first.clock.advance('1s');
      return stopped;
    });
    await stopping;

    const messages = first.logs.entries.map((e) => e.msg);
    expect(messages).toContain('SIGTERM received: stopping; 1 job run(s) in flight get up to 5000 ms to finish');
    expect(messages.some((m) => m.includes(`Job ${id}: still running when the shutdown grace ended; released`))).toBe(true);
    expect(messages).toContain('stopped: no job lost; anything unfinished is stored and runs on the next start');
    const released = await first.job(id);
    expect(released).toMatchObject({ status: 'queued', attempt: 0 });
    expect((await first.get('/stats').catch(() => ({ status: 'closed' }))).status).toBe('closed');

    const second = await startShop(mongo, { database, clock: first.clock });
    try {
      const done = await waitForStatus(second, id, 'completed');
      expect(done.result).toEqual({ trackingNumber: 'TRK-g-1-1' });
      // Reserve and charge are replayed from their stored results, not called again.
      expect(second.app.container.get(PaymentGateway).chargeCount).toBe(0);
      expect((await second.get('/orders/g-1')).body.status).toBe('shipped');
    } finally {
      await second.app.stop();
    }
  });
});

describe('manual review: orders above the threshold wait for a person (a wait token)', () => {
  const bigOrder = (orderId: string) => anOrder(orderId, { items: [{ sku: 'LOOM-LOOM', quantity: 1, priceCents: 250_000 }] });
  const tokenOf = async (shop: Awaited<ReturnType<typeof startShop>>, jobId: string): Promise<string> => {
    const step = (await shop.job(jobId))?.steps.find((s) => s.name === 'manual-review-token');
    return (step?.result as { id: string }).id;
  };

  it('waits in review without a worker, goes on once approved, and is rejected when the reviewer says no', async () => {
    const shop = await startShop(mongo);
    try {
      const approved: string = (await shop.post('/orders', bigOrder('r-1'))).body.jobs.fulfillOrder;
      const refused: string = (await shop.post('/orders', bigOrder('r-2'))).body.jobs.fulfillOrder;
      for (const id of [approved, refused]) await shop.until('the order to wait for review', async () => (await shop.job(id))?.status === 'waiting');
      await shop.until('every run to end', async () => (await shop.app.loom.stats()).inFlight === 0);
      expect((await shop.get('/orders/r-1')).body.status).toBe('in-review');
      expect(shop.app.container.get(PaymentGateway).chargeCount).toBe(0);

      await expect(shop.app.loom.tokens.complete(await tokenOf(shop, approved), { approved: 'yes' })).rejects.toMatchObject({ code: 'INVALID_TOKEN_OUTPUT' });
      expect(await shop.app.loom.tokens.complete(await tokenOf(shop, approved), { approved: true, by: 'ana' })).toEqual({
        completed: true,
        status: 'completed',
      });
      expect(await shop.app.loom.tokens.reject(await tokenOf(shop, refused), 'looks like fraud')).toEqual({ completed: true, status: 'rejected' });
      await shop.until('the approved order to sleep until pickup', async () => (await shop.job(approved))?.steps.some((s) => s.name === 'wait-for-pickup'));
      const rejected = await waitForStatus(shop, refused, 'completed');
      expect(rejected.result).toEqual({ rejected: expect.stringContaining('looks like fraud') });
      expect((await shop.get('/orders/r-2')).body.status).toBe('rejected');

      await shop.t.advance('1h');
      expect((await waitForStatus(shop, approved, 'completed')).result).toEqual({ trackingNumber: 'TRK-r-1-1' });
      expect(shop.app.container.get(PaymentGateway).chargeCount).toBe(1);
    } finally {
      await shop.app.stop();
    }
  });
});
