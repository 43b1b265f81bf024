import { MongoClient, type Db } from 'mongodb';
import { MongoStore } from '@loom/mongo-store';
import type { ClaimRequest, FlowLimits, NewJob } from '@loom/core';
import { benchLogger } from '../loom-jobs.js';
import { median } from '../stats.js';
import type { ScenarioResult, ScenarioSpec } from '../scenario.js';

type FlowClaimCostSpec = Extract<ScenarioSpec, { kind: 'flow-claim-cost' }>;

const NAME = 'bench-flow';
const KEYS = 100;

/** The variants: a queue without limits, and the same with each kind of limit (never reached). */
const VARIANTS: { key: string; flow?: FlowLimits[]; keyed?: boolean }[] = [
  { key: 'Plain' },
  { key: 'Global', flow: [{ name: NAME, globalConcurrency: 1_000 }] },
  { key: 'Rate', flow: [{ name: NAME, rateLimit: { limit: 10_000, perMs: 1_000 } }] },
  { key: 'Group', flow: [{ name: NAME, group: { concurrency: 1_000 } }], keyed: true },
];

interface Side {
  key: string;
  flow?: FlowLimits[];
  keyed: boolean;
  store: MongoStore;
  db: Db;
  claimMs: number[];
  cycleMs: number[];
}

function job(i: number, keyed: boolean, now: Date): NewJob {
  const base: NewJob = { name: NAME, queue: 'bench', payload: { i }, priority: 0, runAt: now, maxAttempts: 1 };
  return keyed ? { ...base, groupKey: `tenant-${i % KEYS}` } : base;
}

/** One round: enqueue, then `claims` claims of `limit` jobs, each completed; claim and claim+complete timed per job. */
async function round(side: Side, claims: number, limit: number): Promise<void> {
  const now = new Date();
  await side.store.enqueue(
    Array.from({ length: claims * limit }, (_, i) => job(i, side.keyed, now)),
    { now },
  );
  const claimTimes: number[] = [];
  const cycleTimes: number[] = [];
  for (let i = 0; i < claims; i++) {
    const at = new Date();
    const req: ClaimRequest = { owner: 'bench', queues: ['bench'], names: [NAME], limit, leaseUntil: new Date(at.getTime() + 60_000), now: at };
    if (side.flow) req.flow = side.flow;
    const t0 = performance.now();
    const jobs = await side.store.claim(req);
    const t1 = performance.now();
    if (jobs.length !== limit) throw new Error(`flow-claim-cost: ${side.key} claim ${i} got ${jobs.length} of ${limit}`);
    await Promise.all(jobs.map((j) => side.store.complete({ jobId: j.id, token: j.lease!.token }, { now: new Date() })));
    claimTimes.push((t1 - t0) / limit);
    cycleTimes.push((performance.now() - t0) / limit);
  }
  side.claimMs.push(median(claimTimes));
  side.cycleMs.push(median(cycleTimes));
}

/**
 * What flow limits add to a claim: the same queue without limits and with a global concurrency, a
 * rate limit or group concurrency (each far from its limit, so every claim gets its jobs), one
 * database each, rounds alternating. Claims of 1 job and batches of 10; per job, the claim alone
 * and claim + complete (a slot is freed at completion).
 */
export async function flowClaimCost(spec: FlowClaimCostSpec): Promise<ScenarioResult> {
  const client = new MongoClient(spec.uri);
  await client.connect();
  const metrics: Record<string, number> = {};
  for (const limit of [1, 10]) {
    const sides: Side[] = [];
    for (const v of VARIANTS) {
      const name = `${spec.db}_${v.key.toLowerCase()}_${limit}`;
      const db = client.db(name);
      await db.dropDatabase();
      const store = new MongoStore({ client, database: name, logger: benchLogger });
      await store.init();
      sides.push({ key: v.key, ...(v.flow ? { flow: v.flow } : {}), keyed: v.keyed === true, store, db, claimMs: [], cycleMs: [] });
    }
    // A warm-up round per side, not counted.
    for (const side of sides) {
      await round(side, 5, limit);
      side.claimMs.length = 0;
      side.cycleMs.length = 0;
    }
    for (let r = 0; r < spec.rounds; r++) for (const side of sides) await round(side, spec.claims, limit);
    const plain = sides[0]!;
    for (const side of sides) {
      const tag = `Batch${limit}`;
      metrics[`flowClaim${side.key}${tag}Ms`] = median(side.claimMs);
      metrics[`flowCycle${side.key}${tag}Ms`] = median(side.cycleMs);
      if (side !== plain) {
        metrics[`flowClaim${side.key}${tag}OverPlain`] = median(side.claimMs.map((ms, i) => ms / plain.claimMs[i]!));
        metrics[`flowCycle${side.key}${tag}OverPlain`] = median(side.cycleMs.map((ms, i) => ms / plain.cycleMs[i]!));
      }
    }
    for (const side of sides) {
      await side.store.close();
      await side.db.dropDatabase();
    }
  }
  await client.close();
  return { metrics };
}
