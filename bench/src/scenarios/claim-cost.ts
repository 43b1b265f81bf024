import { randomUUID } from 'node:crypto';
import { ObjectId, type Document } from 'mongodb';
import { MongoStore } from '@loom/mongo-store';
import type { NewJob } from '@loom/core';
import { CommandCounter } from '../command-counter.js';
import { benchLogger } from '../loom-jobs.js';
import { median, percentile } from '../stats.js';
import type { ScenarioResult, ScenarioSpec } from '../scenario.js';

type ClaimCostSpec = Extract<ScenarioSpec, { kind: 'claim-cost' }>;

const QUEUE = 'bench';
const NAME = 'bench-claim';
const INSERT_BATCH = 10_000;

function newJob(i: number, now: Date): NewJob {
  return { name: NAME, queue: QUEUE, payload: { i }, priority: 0, runAt: now, maxAttempts: 1 };
}

/**
 * How long one `claim` takes with `completed` finished jobs of the same queue and name in the
 * collection. The finished jobs are copies of a job the store itself completed (so they are exactly
 * what a busy installation accumulates), loaded in bulk; loading stops at the time budget, and the
 * count actually loaded is reported.
 */
export async function claimCost(spec: ClaimCostSpec): Promise<ScenarioResult> {
  const counter = new CommandCounter(spec.uri);
  await counter.client.connect();
  const db = counter.client.db(spec.db);
  await db.dropDatabase();
  const store = new MongoStore({ client: counter.client, database: spec.db, logger: benchLogger });
  await store.init();
  const owner = `bench-${process.pid}`;
  const lease = (now: Date) => ({ owner, queues: [QUEUE], names: [NAME], limit: 1, leaseUntil: new Date(now.getTime() + 60_000), now });

  // One job through the store's own lifecycle gives the exact shape of a completed document.
  const [first] = await store.enqueue([newJob(0, new Date())], { now: new Date() });
  const [claimed] = await store.claim(lease(new Date()));
  if (!claimed || claimed.id !== first!.id) throw new Error('claim-cost: could not claim the template job');
  await store.complete({ jobId: claimed.id, token: claimed.lease!.token }, { now: new Date() });
  const jobs = db.collection('loom_jobs');
  const template = await jobs.findOne({ _id: new ObjectId(claimed.id) });
  if (!template || template.status !== 'completed') throw new Error('claim-cost: the template job is not completed in loom_jobs');

  const loadStart = performance.now();
  let loaded = 1;
  while (loaded < spec.completed && performance.now() - loadStart < spec.loadBudgetMs) {
    const n = Math.min(INSERT_BATCH, spec.completed - loaded);
    const docs: Document[] = Array.from({ length: n }, (_, j) => ({ ...template, _id: new ObjectId(), payload: { i: loaded + j } }));
    await jobs.insertMany(docs, { ordered: false });
    loaded += n;
  }
  const loadMs = performance.now() - loadStart;

  const roundMedians: number[] = [];
  const all: number[] = [];
  for (let round = 0; round < spec.rounds; round++) {
    await store.enqueue(Array.from({ length: spec.claims }, (_, i) => newJob(i, new Date())), { now: new Date() });
    const times: number[] = [];
    for (let i = 0; i < spec.claims; i++) {
      const now = new Date();
      const t0 = performance.now();
      const [job] = await store.claim(lease(now));
      times.push(performance.now() - t0);
      if (!job) throw new Error(`claim-cost: claim ${i} of round ${round} found nothing`);
      await store.complete({ jobId: job.id, token: job.lease!.token }, { now: new Date() });
    }
    roundMedians.push(median(times));
    all.push(...times);
  }
  await store.close();
  await db.dropDatabase();
  await counter.close();
  const notes = loaded < spec.completed ? [`loaded ${loaded} of ${spec.completed} completed jobs within the ${spec.loadBudgetMs} ms budget`] : [];
  return {
    metrics: {
      completedJobs: loaded,
      ms: median(roundMedians),
      p99Ms: percentile(all, 99),
      loadSec: loadMs / 1000,
    },
    notes,
  };
}
