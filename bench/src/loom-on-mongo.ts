import { Container } from 'inversify';
import { Loom, type JobClass } from '@loom/core';
import { MongoStore, type MongoStoreOptions } from '@loom/mongo-store';
import { CommandCounter } from './command-counter.js';
import { benchLogger } from './loom-jobs.js';
import type { MongoTargetRef } from './scenario.js';

/** A Loom engine on MongoStore whose every command is counted. */
export interface LoomOnMongo {
  loom: Loom;
  store: MongoStore;
  counter: CommandCounter;
  close(): Promise<void>;
}

/** Builds Loom on a fresh database of the target, with a command-monitored client. */
export async function openLoomOnMongo(
  target: MongoTargetRef,
  jobs: JobClass[],
  concurrency: number,
  storeOptions: Partial<MongoStoreOptions> = {},
): Promise<LoomOnMongo> {
  const counter = new CommandCounter(target.uri, 'loom_jobs'); // MongoStore's default collection names
  await counter.client.connect();
  await counter.client.db(target.db).dropDatabase();
  const store = new MongoStore({ ...storeOptions, client: counter.client, database: target.db, logger: benchLogger });
  const loom = await Loom.create({ container: new Container(), store, jobs, concurrency, logger: benchLogger });
  return {
    loom,
    store,
    counter,
    async close() {
      await loom.stop({ grace: '5s' });
      await store.close();
      await counter.client.db(target.db).dropDatabase();
      await counter.close();
    },
  };
}
