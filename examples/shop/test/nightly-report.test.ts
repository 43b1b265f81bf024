import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { EnqueueResult, NewJob } from '@loom/core';
import { FakeClock } from '@loom/testing';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';
import type { Order } from '../src/orders/order.js';
import { OrderRepository } from '../src/orders/order-repository.js';
import { ReportRepository } from '../src/reports/report-repository.js';
import { startShop, type ShopUnderTest } from './shop-harness.js';

let mongo: TestMongo;
beforeAll(async () => {
  mongo = await startTestMongo();
});
afterAll(() => mongo.stop());

const FIRE_AT = new Date('2026-03-11T03:00:00Z');
const SLOT_KEY = `cron:nightly-report:${FIRE_AT.toISOString()}`;
/** Real time the instances get to reach the slot; a deadline, not a pause. */
const BOTH_ATTEMPT_MS = 10_000;

function order(id: string, at: string): Order {
  const createdAt = new Date(at);
  return {
    _id: id,
    email: `${id}@example.com`,
    items: [{ sku: 'LOOM-MUG', quantity: 1, priceCents: 1200 }],
    totalCents: 1200,
    status: 'placed',
    createdAt,
    updatedAt: createdAt,
  };
}

/** What each instance did with the 03:00 slot, seen on its store and its report repository. */
interface Trail {
  /** Each instance's compare-and-set of the schedule past the slot, and whether it won. */
  advances: { instance: string; won: boolean }[];
  /** Each instance's enqueue of the slot's job, and whether the store had it already. */
  attempts: { instance: string; deduplicated: boolean }[];
  /** `schedule:fired` events, by instance. */
  fired: string[];
  /** NightlyReport handler runs (each writes the report once), by instance. */
  runs: string[];
  /** The instances that reached the advance past the slot. */
  reached: Set<string>;
  /** Called when an instance reaches it. */
  onReached?: () => void;
}

/**
 * Records what `shop` (called `instance`) does with the slot. Its scheduler's advance of the
 * schedule past the slot waits until both instances have reached that advance (or until the
 * deadline): without that, an instance whose tick came after the other's advance would see
 * nothing due and stay idle, and the test would prove nothing about two instances racing.
 */
function observe(instance: string, shop: ShopUnderTest, trail: Trail, bothReached: Promise<void>): void {
  const store = shop.app.store;
  const enqueue = store.enqueue.bind(store);
  store.enqueue = async (jobs: NewJob[], opts: Parameters<typeof store.enqueue>[1]): Promise<EnqueueResult[]> => {
    const results = await enqueue(jobs, opts);
    jobs.forEach((job, i) => {
      if (job.idempotencyKey !== SLOT_KEY) return;
      trail.attempts.push({ instance, deduplicated: results[i].deduplicated });
    });
    return results;
  };
  const advance = store.advanceSchedule.bind(store);
  store.advanceSchedule = async (name, from, to, now, fire) => {
    if (to.getTime() !== FIRE_AT.getTime()) return advance(name, from, to, now, fire);
    trail.reached.add(instance);
    trail.onReached?.();
    await bothReached;
    const won = await advance(name, from, to, now, fire);
    trail.advances.push({ instance, won });
    return won;
  };
  shop.app.loom.on('schedule:fired', (e) => e.fireAt.getTime() === FIRE_AT.getTime() && trail.fired.push(instance));
  const reports = shop.app.container.get(ReportRepository);
  const save = reports.save.bind(reports);
  reports.save = (report) => {
    trail.runs.push(instance);
    return save(report);
  };
}

describe('NightlyReport: a cron job', () => {
  it("fires at 03:00 UTC once across two instances and reports the previous day's orders", async () => {
    // Two instances of the shop on one database and one clock, two minutes before the fire time.
    const clock = new FakeClock('2026-03-11T02:58:00Z');
    const a = await startShop(mongo, { clock });
    const b = await startShop(mongo, { clock, database: a.app.config.database });
    const trail: Trail = { advances: [], attempts: [], fired: [], runs: [], reached: new Set() };
    let bothAttempted!: () => void;
    const bothReached = new Promise<void>((resolve) => (bothAttempted = resolve));
    // If an instance never reaches the slot, the advance goes on after the deadline and the
    // assertions below say which instance stayed idle.
    const deadline = setTimeout(bothAttempted, BOTH_ATTEMPT_MS);
    trail.onReached = () => trail.reached.size === 2 && bothAttempted();
    observe('a', a, trail, bothReached);
    observe('b', b, trail, bothReached);
    try {
      const orders = a.app.container.get(OrderRepository);
      for (const o of [order('n-1', '2026-03-10T08:00:00Z'), order('n-2', '2026-03-10T23:59:00Z'), order('n-3', '2026-03-11T01:00:00Z')]) {
        await orders.insertIfAbsent(o);
      }
      const reports = a.app.container.get(ReportRepository);

      await a.t.advance('1m'); // 02:59: not yet
      expect(await reports.get('2026-03-10')).toBeNull();
      expect(trail.attempts).toEqual([]);
      await a.t.advance('1m');
      const report = await a.until('the report of March 10', () => reports.get('2026-03-10'));
      expect(report).toMatchObject({ orders: 2 });

      const runs = await a.until('the nightly run to finish', async () => {
        const jobs = await a.app.store.listJobs({ name: 'nightly-report' });
        return jobs.every((j) => j.status === 'completed') ? jobs : undefined;
      });
      expect(runs.map((j) => [j.scheduledFor?.toISOString(), j.idempotencyKey, j.attempt])).toEqual([[FIRE_AT.toISOString(), SLOT_KEY, 1]]);
      // Both instances raced to advance the schedule past the slot; one won, and only it enqueued
      // the slot's job (once), reported it, and the handler ran once.
      expect(trail.advances.map((t) => t.instance).sort()).toEqual(['a', 'b']);
      const winners = trail.advances.filter((t) => t.won);
      expect(winners).toHaveLength(1);
      expect(trail.attempts).toEqual([{ instance: winners[0].instance, deduplicated: false }]);
      expect(trail.fired).toHaveLength(1);
      expect(trail.runs).toHaveLength(1);
    } finally {
      clearTimeout(deadline);
      bothAttempted(); // a stop waits for a tick in progress
      await b.app.stop();
      await a.app.stop();
    }
  });
});
