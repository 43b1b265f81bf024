import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { FakeClock } from '@loom/testing';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';
import type { Order } from '../src/orders/order.js';
import { OrderRepository } from '../src/orders/order-repository.js';
import { ReportRepository } from '../src/reports/report-repository.js';
import { startShop } from './shop-harness.js';

let mongo: TestMongo;
beforeAll(async () => {
  mongo = await startTestMongo();
});
afterAll(() => mongo.stop());

function order(id: string, at: string): Order {
  const createdAt = new Date(at);
  return { _id: id, email: `${id}@example.com`, items: [{ sku: 'LOOM-MUG', quantity: 1, priceCents: 1200 }], totalCents: 1200, status: 'placed', createdAt, updatedAt: createdAt };
}

describe('NightlyReport: a cron job', () => {
  it("fires at 03:00 UTC once across two instances and reports the previous day's orders", async () => {
    // Two instances of the shop on one database and one clock, two minutes before the fire time.
    const clock = new FakeClock('2026-03-11T02:58:00Z');
    const a = await startShop(mongo, { clock });
    const b = await startShop(mongo, { clock, database: a.app.config.database });
    try {
      const orders = a.app.container.get(OrderRepository);
      for (const o of [order('n-1', '2026-03-10T08:00:00Z'), order('n-2', '2026-03-10T23:59:00Z'), order('n-3', '2026-03-11T01:00:00Z')]) {
        await orders.insertIfAbsent(o);
      }
      const reports = a.app.container.get(ReportRepository);

      await a.t.advance('1m'); // 02:59: not yet
      expect(await reports.get('2026-03-10')).toBeNull();
      await a.t.advance('1m');
      const report = await a.until('the report of March 10', () => reports.get('2026-03-10'));
      expect(report).toMatchObject({ orders: 2 });

      const runs = await a.until('the nightly run to finish', async () => {
        const jobs = await a.app.store.listJobs({ name: 'nightly-report' });
        return jobs.every((j) => j.status === 'completed') ? jobs : undefined;
      });
      expect(runs.map((j) => [j.scheduledFor?.toISOString(), j.idempotencyKey])).toEqual([
        ['2026-03-11T03:00:00.000Z', 'cron:nightly-report:2026-03-11T03:00:00.000Z'],
      ]);
    } finally {
      await b.app.stop();
      await a.app.stop();
    }
  });
});
