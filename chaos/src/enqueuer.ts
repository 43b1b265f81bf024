import 'reflect-metadata';
import { Container } from 'inversify';
import type { MongoClient } from 'mongodb';
import { Loom, type EnqueueResult } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import { CHAOS_HANDLER, ChaosEffect, ChaosLimited, ensureChaosIndexes } from './chaos-job.js';

/** A Loom that only enqueues chaos jobs (never started), on `database` through `client`. */
export interface ChaosEnqueuer {
  /**
   * Enqueues one job per key (ChaosEffect, or ChaosLimited with `limited`); a key already stored
   * comes back deduplicated.
   */
  enqueue(keys: readonly string[], limited?: boolean): Promise<EnqueueResult[]>;
  close(): Promise<void>;
}

export async function chaosEnqueuer(client: MongoClient, database: string): Promise<ChaosEnqueuer> {
  await ensureChaosIndexes(client.db(database));
  const store = new MongoStore({ client, database, retention: { completed: false }, logger: { debug: () => {}, warn: () => {}, error: (o, m) => console.error(m, o) } });
  await store.init();
  const container = new Container();
  container.bind(CHAOS_HANDLER).toConstantValue({}); // never runs a job
  const loom = await Loom.create({ container, store, jobs: [ChaosEffect, ChaosLimited], keepAlive: false });
  return {
    enqueue(keys, limited = false) {
      return loom.enqueueMany(limited ? ChaosLimited : ChaosEffect, keys.map((key) => ({ key })));
    },
    async close() {
      await loom.stop();
    },
  };
}
