import type { Db } from 'mongodb';
import { MongoStore } from '@loom/mongo-store';
import { JOB_STATUSES, type JobPageQuery, type NewJob } from '@loom/core';
import { CommandCounter } from '../command-counter.js';
import { loadCompletedJobs } from '../completed-jobs.js';
import { benchLogger } from '../loom-jobs.js';
import { median } from '../stats.js';
import type { ScenarioResult, ScenarioSpec } from '../scenario.js';

type ListCostSpec = Extract<ScenarioSpec, { kind: 'list-cost' }>;

const QUEUE = 'bench';
const NAME = 'bench-list';
const PAGE = 50;
/** Queued jobs next to the completed ones: a status page of a rare status in a large collection. */
const QUEUED = 200;

function newJob(i: number): NewJob {
  return { name: NAME, queue: QUEUE, payload: { i }, priority: 0, runAt: new Date(Date.now() + 86_400_000), maxAttempts: 1 };
}

/** The pages an operator looks at (a dashboard's status pages, `loom jobs ls`), timed one by one. */
const PAGES: Record<string, Omit<JobPageQuery, 'limit'>> = {
  Completed: { statuses: ['completed'] },
  Queued: { statuses: ['queued'] },
  ByName: { statuses: ['completed', 'queued'], name: NAME },
  All: { statuses: [...JOB_STATUSES] },
};

interface Side {
  store: MongoStore;
  db: Db;
  loaded: number;
  /** Per page kind: every timing of every round. */
  samples: Record<string, number[]>;
}

async function prepare(counter: CommandCounter, dbName: string, target: number, budgetMs: number): Promise<Side> {
  const db = counter.client.db(dbName);
  await db.dropDatabase();
  const store = new MongoStore({ client: counter.client, database: dbName, logger: benchLogger });
  await store.init();
  const loaded = await loadCompletedJobs(store, db, { ...newJob(0), runAt: new Date() }, target, budgetMs);
  await store.enqueue(
    Array.from({ length: QUEUED }, (_, i) => newJob(i)),
    { now: new Date() },
  );
  return { store, db, loaded, samples: {} };
}

/** One round: each page kind `reps` times, plus a page `depth` cursors deep into the completed jobs. */
async function round(side: Side, reps: number, depth: number): Promise<void> {
  const timed = async (kind: string, query: JobPageQuery): Promise<void> => {
    const times: number[] = [];
    for (let i = 0; i < reps; i++) {
      const t0 = performance.now();
      const jobs = await side.store.listJobPage(query);
      times.push(performance.now() - t0);
      if (jobs.length === 0) throw new Error(`list-cost: the ${kind} page is empty`);
    }
    (side.samples[kind] ??= []).push(...times);
  };
  for (const [kind, page] of Object.entries(PAGES)) await timed(kind, { ...page, limit: PAGE });
  let after: JobPageQuery['after'];
  for (let i = 0; i < depth; i++) {
    const jobs = await side.store.listJobPage({ statuses: ['completed'], limit: PAGE, ...(after ? { after } : {}) });
    const last = jobs[jobs.length - 1]!;
    after = { createdAt: last.createdAt, id: last.id };
  }
  await timed('Deep', { statuses: ['completed'], limit: PAGE, after: after! });
  const t0 = performance.now();
  await side.store.stats();
  (side.samples.Stats ??= []).push(performance.now() - t0);
}

/**
 * How long a page of `listJobPage` (what `loom.jobs.list`, the dashboard and `loom jobs ls` read)
 * takes with few vs many completed jobs in the collection: the first page of completed jobs, a page
 * of the few queued ones, a page by name, a page over every status, and the fifth page by cursor
 * (an earlier one when the small collection has fewer).
 * `stats()` is timed too, for information: it reads counters for completed jobs, so it should not grow.
 */
export async function listCost(spec: ListCostSpec): Promise<ScenarioResult> {
  const counter = new CommandCounter(spec.uri);
  await counter.client.connect();
  const small = await prepare(counter, `${spec.db}_small`, spec.small, spec.loadBudgetMs);
  const large = await prepare(counter, `${spec.db}_large`, spec.large, spec.loadBudgetMs);
  // The fifth page, or the last full one a small collection has.
  const depth = Math.max(1, Math.min(4, Math.floor(small.loaded / PAGE) - 1));
  for (let r = 0; r < spec.rounds; r++) {
    await round(small, spec.reps, depth);
    await round(large, spec.reps, depth);
  }
  for (const side of [small, large]) {
    await side.store.close();
    await side.db.dropDatabase();
  }
  await counter.close();
  const metrics: Record<string, number> = { listSmallJobs: small.loaded, listLargeJobs: large.loaded };
  // Medians of all timings of a kind (rounds alternate between the sides, so a busy machine
  // disturbs both alike); the target is the worst ratio over the page kinds.
  let worst = 0;
  for (const kind of [...Object.keys(PAGES), 'Deep', 'Stats']) {
    const s = median(small.samples[kind]!);
    const l = median(large.samples[kind]!);
    metrics[`list${kind}SmallMs`] = s;
    metrics[`list${kind}LargeMs`] = l;
    if (kind !== 'Stats') worst = Math.max(worst, l / s);
  }
  metrics.listLargeOverSmall = worst;
  const notes =
    large.loaded < spec.large ? [`list cost: loaded ${large.loaded} of ${spec.large} completed jobs within the ${spec.loadBudgetMs / 1000} s budget`] : [];
  return { metrics, notes };
}
