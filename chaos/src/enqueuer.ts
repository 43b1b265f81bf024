import 'reflect-metadata';
import { Container } from 'inversify';
import type { MongoClient } from 'mongodb';
import { Loom, type EnqueueResult } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import { CHAOS_HANDLER, ChaosEffect, ensureChaosIndexes } from './chaos-job.js';

/** A Loom that only enqueues ChaosEffect jobs (never started), on `database` through `client`. */
export interface ChaosEnqueuer {
  /** Enqueues one job per key; a key already stored comes back deduplicated. */
  enqueue(keys: readonly string[]): Promise<EnqueueResult[]>;
  close(): Promise<void>;
}

export async function chaosEnqueuer(client: MongoClient, database: string): Promise<ChaosEnqueuer> {
  await ensureChaosIndexes(client.db(database));
  const store = new MongoStore({ client, database, retention: { completed: false }, logger: { debug: () => {}, warn: () => {}, error: (o, m) => console.error(m, o) } });
  await store.init();
  const container = new Container();
  container.bind(CHAOS_HANDLER).toConstantValue({}); // never runs a job
  const loom = await Loom.create({ container, store, jobs: [ChaosEffect], keepAlive: false });
  return {
    enqueue(keys) {
      return loom.enqueueMany(ChaosEffect, keys.map((key) => ({ key })));
    },
    async close() {
      await loom.stop();
    },
  };
}
