import 'reflect-metadata';
import { Container } from 'inversify';
import type { MongoClient } from 'mongodb';
import { Loom, type EnqueueResult } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import { CHAOS_HANDLER, ChaosEffect, ChaosLimited, ensureChaosIndexes } from './chaos-job.js';
import { ChaosChild, ChaosFlow, ChaosPlain } from './soak-jobs.js';

/** What a key's job is: the transactional chaos job, its `globalConcurrency` twin, a plain job or a workflow. */
export type ChaosKind = 'effect' | 'limited' | 'plain' | 'flow';

const CLASSES = { effect: ChaosEffect, limited: ChaosLimited, plain: ChaosPlain, flow: ChaosFlow } as const;

/** A Loom that only enqueues chaos jobs (never started), on `database` through `client`. */
export interface ChaosEnqueuer {
  /** Enqueues one job of `kind` per key; a key already stored comes back deduplicated. */
  enqueue(keys: readonly string[], kind?: ChaosKind): Promise<EnqueueResult[]>;
  /** Pauses a cron schedule in every worker (a soak stops its fires before checking them). */
  pauseSchedule(name: string): Promise<void>;
  close(): Promise<void>;
}

/** `partitions`: MongoStore's option, the workers' own (a job's partition is chosen at enqueue). */
export async function chaosEnqueuer(client: MongoClient, database: string, partitions: Record<string, number> = {}): Promise<ChaosEnqueuer> {
  await ensureChaosIndexes(client.db(database));
  const store = new MongoStore({
    client,
    database,
    retention: { completed: false },
    partitions,
    logger: { debug: () => {}, warn: () => {}, error: (o, m) => console.error(m, o) },
  });
  await store.init();
  const container = new Container();
  container.bind(CHAOS_HANDLER).toConstantValue({}); // never runs a job
  const loom = await Loom.create({ container, store, jobs: [ChaosEffect, ChaosLimited, ChaosPlain, ChaosChild, ChaosFlow], keepAlive: false });
  return {
    enqueue(keys, kind = 'effect') {
      return keys.length === 0
        ? Promise.resolve([])
        : loom.enqueueMany(
            CLASSES[kind],
            keys.map((key) => ({ key })),
          );
    },
    async pauseSchedule(name) {
      await store.setSchedulePaused(name, true, new Date());
    },
    async close() {
      await loom.stop();
    },
  };
}
