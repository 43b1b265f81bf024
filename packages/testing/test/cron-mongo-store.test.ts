import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Job, type JobContext } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import { createTestLoom, FakeClock, type TestLoom } from '@loom/testing';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';
import { HEAVY_TEST_MS } from '../src/conformance/harness.js';

// The same cron guarantees on MongoStore: the slot's job is unique through the store's unique
// idempotency-key index, and lastFireAt moves through its compare-and-set.
const runs: string[] = [];

@Job({ name: 'mongo-heartbeat', schedule: '*/5 * * * *' })
class MongoHeartbeat {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    runs.push(ctx.scheduledFor!.toISOString());
  }
}

let mongo: TestMongo;
beforeAll(async () => {
  mongo = await startTestMongo();
});
afterAll(async () => {
  await mongo?.stop();
});

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: (obj: unknown, msg?: string) => console.error(msg, obj) };

describe('cron on MongoStore', () => {
  it(
    'three engines on one database and clock: one run per fire time, clock moved back fires nothing again',
    async () => {
      const clock = new FakeClock('2026-01-01T00:00:00Z');
      const database = mongo.newDatabaseName('cron');
      const engines: TestLoom[] = [];
      for (let i = 0; i < 3; i++) {
        // Polls play no part in cron (fires are the schedulers' timers; advance stops at each fired
        // job's run time): hourly polls keep the steps of advance to the schedulers' minute ticks.
        const store = new MongoStore({ client: mongo.client, database, logger: quiet, retention: { completed: false } });
        engines.push(await createTestLoom({ jobs: [MongoHeartbeat], clock, store, pollInterval: '1h' }));
      }
      const [first, ...others] = engines;
      const step = async (move: () => Promise<void> | void) => {
        await move();
        for (const engine of others) await engine.settle();
        await first.settle();
      };
      for (let i = 0; i < 6; i++) await step(() => first.advance('5m'));
      await step(() => clock.set('2026-01-01T00:12:00Z'));
      await step(() => first.advance('18m'));
      for (const engine of engines) await engine.stop();

      const slots = Array.from({ length: 6 }, (_, i) => new Date(Date.parse('2026-01-01T00:05:00Z') + i * 300_000).toISOString());
      expect(runs.sort()).toEqual(slots);
      expect(await first.loom.schedules.list()).toEqual([expect.objectContaining({ name: 'mongo-heartbeat', lastFireAt: new Date('2026-01-01T00:30:00Z') })]);
    },
    HEAVY_TEST_MS,
  ); // three schedulers ticking each minute of 48: a few hundred round trips to a real database
});
