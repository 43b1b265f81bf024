import type { Db } from 'mongodb';
import { MongoStore } from '@loom/mongo-store';
import type { NewJob } from '@loom/core';
import { CommandCounter } from '../command-counter.js';
import { loadCompletedJobs } from '../completed-jobs.js';
import { benchLogger } from '../loom-jobs.js';
import { median, percentile } from '../stats.js';
import type { ScenarioResult, ScenarioSpec } from '../scenario.js';

type ClaimCostSpec = Extract<ScenarioSpec, { kind: 'claim-cost' }>;

const QUEUE = 'bench';
const NAME = 'bench-claim';
/** Due jobs the blocked side's claims must pass over: a name whose concurrency is used up... */
const SATURATED = 'bench-saturated';
/** ...and a name no engine of this claim runs. */
const UNKNOWN = 'bench-unknown';
const INSERT_BATCH = 10_000;

function newJob(i: number, now: Date): NewJob {
  return { name: NAME, queue: QUEUE, payload: { i }, priority: 0, runAt: now, maxAttempts: 1 };
}

/** One store on its own database, holding `loaded` completed jobs. */
interface Side {
  store: MongoStore;
  db: Db;
  loaded: number;
  times: number[];
  roundMedians: number[];
}

const owner = `bench-${process.pid}`;
/** A claim of one job of NAME, by an engine that also runs SATURATED but has no slot left for it. */
function claimRequest(now: Date) {
  return { owner, queues: [QUEUE], names: [NAME, SATURATED], excludeNames: [SATURATED], limit: 1, leaseUntil: new Date(now.getTime() + 60_000), now };
}

/**
 * `count` due jobs the claim must not take, half of a saturated name and half of an unknown one,
 * all of a higher priority: every one of them sorts ahead of the jobs the claim is after.
 */
async function addBlockedJobs(side: Side, count: number): Promise<void> {
  const now = new Date();
  for (let done = 0; done < count; done += INSERT_BATCH) {
    const jobs = Array.from({ length: Math.min(INSERT_BATCH, count - done) }, (_, j): NewJob => {
      const i = done + j;
      return { name: i % 2 === 0 ? SATURATED : UNKNOWN, queue: QUEUE, payload: { i }, priority: 1, runAt: now, maxAttempts: 1 };
    });
    await side.store.enqueue(jobs, { now });
  }
}

/** A store on a fresh database with `target` completed jobs of the claimed queue and name. */
async function prepare(counter: CommandCounter, dbName: string, target: number, budgetMs: number): Promise<Side> {
  const db = counter.client.db(dbName);
  await db.dropDatabase();
  const store = new MongoStore({ client: counter.client, database: dbName, logger: benchLogger });
  await store.init();
  const loaded = await loadCompletedJobs(store, db, newJob(0, new Date()), target, budgetMs);
  return { store, db, loaded, times: [], roundMedians: [] };
}

/** One round: enqueue `claims` jobs, then claim them one by one (timed) and complete each. */
async function round(side: Side, claims: number): Promise<void> {
  await side.store.enqueue(
    Array.from({ length: claims }, (_, i) => newJob(i, new Date())),
    { now: new Date() },
  );
  const times: number[] = [];
  for (let i = 0; i < claims; i++) {
    const now = new Date();
    const t0 = performance.now();
    const [job] = await side.store.claim(claimRequest(now));
    times.push(performance.now() - t0);
    if (!job) throw new Error(`claim-cost: claim ${i} found nothing`);
    await side.store.complete({ jobId: job.id, token: job.lease!.token }, { now: new Date() });
  }
  side.roundMedians.push(median(times));
  side.times.push(...times);
}

/**
 * How long one `claim` takes with few vs many completed jobs of the same queue and name in the
 * collection, and with `blocked` due jobs of a saturated or unknown name ahead of the claimable
 * ones (the claim must skip them, not fetch each one). The collections live side by side on the
 * same server and their rounds alternate, so a busy machine disturbs all alike.
 */
export async function claimCost(spec: ClaimCostSpec): Promise<ScenarioResult> {
  const counter = new CommandCounter(spec.uri);
  await counter.client.connect();
  const small = await prepare(counter, `${spec.db}_small`, spec.small, spec.loadBudgetMs);
  const blocked = await prepare(counter, `${spec.db}_blocked`, spec.small, spec.loadBudgetMs);
  await addBlockedJobs(blocked, spec.blocked);
  const loadStart = performance.now();
  const large = await prepare(counter, `${spec.db}_large`, spec.large, spec.loadBudgetMs);
  const loadSec = (performance.now() - loadStart) / 1000;
  for (let r = 0; r < spec.rounds; r++) {
    await round(small, spec.claims);
    await round(large, spec.claims);
    await round(blocked, spec.claims);
  }
  for (const side of [small, large, blocked]) {
    await side.store.close();
    await side.db.dropDatabase();
  }
  await counter.close();
  const notes = large.loaded < spec.large ? [`loaded ${large.loaded} of ${spec.large} completed jobs within the ${spec.loadBudgetMs / 1000} s budget`] : [];
  const ratios = small.roundMedians.map((s, i) => large.roundMedians[i]! / s);
  return {
    metrics: {
      claimSmallCompletedJobs: small.loaded,
      claimLargeCompletedJobs: large.loaded,
      claimSmallMs: median(small.roundMedians),
      claimLargeMs: median(large.roundMedians),
      claimSmallP99Ms: percentile(small.times, 99),
      claimLargeP99Ms: percentile(large.times, 99),
      claimLargeOverSmall: median(ratios),
      claimBlockedJobs: spec.blocked,
      claimBlockedMs: median(blocked.roundMedians),
      claimBlockedP99Ms: percentile(blocked.times, 99),
      claimBlockedOverSmall: median(small.roundMedians.map((s, i) => blocked.roundMedians[i]! / s)),
      claimLoadSec: loadSec,
    },
    notes,
  };
}
