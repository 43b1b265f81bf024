import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Container } from 'inversify';
import { Job, Loom, type JobContext } from '@loom/core';
import { TcpProxy } from '../../../chaos/src/tcp-proxy.js';
import { TX_EFFECTS } from '../../../chaos/src/chaos-job.js';
import { chaosEnqueuer } from '../../../chaos/src/enqueuer.js';
import { MongoStore } from '../src/index.js';
import { CLEAN, keysFrom, verdictOf, startChaosWorker, STARTUP_MS, useEmulatorProcess, type ChaosWorker } from './reliability-workers.js';
import { waitUntil } from './wait-until.js';

// The database becomes unreachable: a TCP proxy between Loom and the emulator (its own process)
// drops every connection and refuses new ones. LOOM_OUTAGE_MS sets how long (the full
// figure is 30 s; CI uses a few seconds). Real time with short leases; waits are on conditions.
const OUTAGE_MS = Number(process.env.LOOM_OUTAGE_MS ?? 4000);
const RECOVERY_MS = 120_000;

const mongo = useEmulatorProcess();

async function proxy(): Promise<TcpProxy> {
  const url = new URL(mongo.uri);
  const p = await TcpProxy.start({ host: url.hostname, port: Number(url.port) });
  mongo.onCleanup(() => p.close());
  return p;
}

describe('the database unreachable', () => {
  it(
    `for ${OUTAGE_MS} ms: no worker crashes or wedges; every job completes and each pool runs at full concurrency again`,
    async () => {
      const database = `ro_outage_${process.pid}`;
      const db = mongo.client.db(database);
      const p = await proxy();
      const CONCURRENCY = 4;
      const env = { CONCURRENCY: String(CONCURRENCY), MAX_DELAY_MS: '300', SERVER_SELECTION_MS: '500' };
      const workers: ChaosWorker[] = ['a', 'b'].map((owner) => mongo.track(startChaosWorker(p.uriFor(mongo.uri), database, owner, env)));
      await Promise.all(workers.map((w) => w.waitForLine(/^READY /, STARTUP_MS)));

      const enqueuer = await chaosEnqueuer(mongo.client, database);
      const before = keysFrom('before', 100);
      await enqueuer.enqueue(before);
      await waitUntil(async () => (await db.collection(TX_EFFECTS).countDocuments({})) >= 20, RECOVERY_MS, 'work to be under way');

      p.cut();
      // The length of the fault itself, not a wait for something to happen.
      await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
      expect(workers.map((w) => w.process.exitCode)).toEqual([null, null]);
      p.restore();

      // New work after the outage: each worker must again run CONCURRENCY handlers at once.
      const after = keysFrom('after', 100);
      await enqueuer.enqueue(after);
      await waitUntil(async () => (await db.collection('loom_jobs').countDocuments({ status: 'completed' })) === 200, RECOVERY_MS, 'every job to complete');
      await enqueuer.close();

      expect(workers.map((w) => w.process.exitCode)).toEqual([null, null]);
      // Every job completed once with its transactional effect counted once, judged by the chaos oracle.
      expect(await verdictOf(db, [...before, ...after])).toMatchObject(CLEAN);
      for (const owner of ['a', 'b']) {
        const busiest = await db
          .collection('chaos_effects')
          .find({ owner, key: { $in: after } })
          .sort({ inflight: -1 })
          .limit(1)
          .next();
        expect([owner, busiest?.inflight]).toEqual([owner, CONCURRENCY]);
      }
      await Promise.all(workers.map((w) => w.kill('SIGTERM')));
    },
    2 * STARTUP_MS + OUTAGE_MS + RECOVERY_MS,
  );
});

describe('the connection lost between the handler and its ack', () => {
  it(
    'the job runs again on another worker and the idempotent sink keeps one effect',
    async () => {
      const database = `ro_ack_${process.pid}`;
      const db = mongo.client.db(database);
      // No unique index on the sink: one row because the second run's upsert finds the first's.
      const p = await proxy();
      let handled!: () => void;
      const handledOnce = new Promise<void>((resolve) => (handled = resolve));
      let letAckGo!: () => void;
      const ackGate = new Promise<void>((resolve) => (letAckGo = resolve));

      @Job({ name: 'ack-loss', retries: 5, backoff: { type: 'fixed', delay: '10ms' } })
      class AckLoss {
        async run(payload: { key: string }, ctx: JobContext): Promise<number> {
          await db.collection('effects').insertOne({ key: payload.key, attempt: ctx.attempt });
          await db.collection('sink').updateOne({ key: payload.key }, { $setOnInsert: { key: payload.key } }, { upsert: true });
          if (ctx.attempt === 1) {
            handled();
            await ackGate; // the test cuts the connection before this run may ack
          }
          return ctx.attempt;
        }
      }

      // Errors while the connection is cut are expected; the test asserts on the outcome instead.
      const logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {}, child: () => logger };
      const storeOf = (url: string) => new MongoStore({ url, database, logger, clientOptions: { serverSelectionTimeoutMS: 2000, connectTimeoutMS: 2000 } });
      const loomOf = (store: MongoStore, owner: string) =>
        Loom.create({ container: new Container(), store, jobs: [AckLoss], lease: '1500ms', pollInterval: '100ms', owner, logger, keepAlive: false });
      const stores = [storeOf(p.uriFor(mongo.uri)), storeOf(mongo.uri)];
      const cutOff = await loomOf(stores[0], 'cut-off');
      const { id } = await cutOff.enqueue(AckLoss, { key: 'k1' });
      await cutOff.start();
      await handledOnce;
      p.cut();
      letAckGo();

      const rescuer = await loomOf(stores[1], 'rescuer');
      await rescuer.start();
      await waitUntil(async () => (await rescuer.getJob(id))?.status === 'completed', RECOVERY_MS, 'the job to complete on the rescuer');
      p.restore();

      expect((await rescuer.getJob(id))?.result).toBe(2); // the second run's completion, not the cut-off one
      expect(await db.collection('effects').countDocuments({ key: 'k1' })).toBe(2);
      expect(await db.collection('sink').countDocuments({ key: 'k1' })).toBe(1);
      await rescuer.stop({ grace: 0 });
      await cutOff.stop({ grace: 0 });
      await Promise.all(stores.map((s) => s.close()));
    },
    RECOVERY_MS + 30_000,
  );
});
