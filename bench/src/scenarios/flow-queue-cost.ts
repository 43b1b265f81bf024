import 'reflect-metadata';
import { Container } from 'inversify';
import { MongoClient, type CommandStartedEvent } from 'mongodb';
import { Job, Loom, type ClaimRequest, type JobRecord } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import { benchLogger } from '../loom-jobs.js';
import { processCpuMs } from '../process-cpu.js';
import { median } from '../stats.js';
import type { ScenarioResult, ScenarioSpec } from '../scenario.js';

type FlowQueueCostSpec = Extract<ScenarioSpec, { kind: 'flow-queue-cost' }>;

const KEYS = 100;

/** Runs of the current round's jobs; `done` is called when the last one ran. */
const round = { ran: 0, expected: Infinity, done: (): void => {} };
function ran(): void {
  if (++round.ran === round.expected) round.done();
}

@Job({ name: 'bench-queue-plain', retries: 0 })
class PlainJob {
  async run(): Promise<void> {
    ran();
  }
}

@Job({ name: 'bench-queue-global', retries: 0, globalConcurrency: 1_000 })
class GlobalJob {
  async run(): Promise<void> {
    ran();
  }
}

@Job({ name: 'bench-queue-rate', retries: 0, rateLimit: { limit: 10_000, per: '1s' } })
class RateJob {
  async run(): Promise<void> {
    ran();
  }
}

@Job({ name: 'bench-queue-group', retries: 0, group: { key: (payload: { i: number }) => `tenant-${payload.i % KEYS}`, concurrency: 1_000 } })
class GroupJob {
  async run(): Promise<void> {
    ran();
  }
}

/** A queue without limits, and the same no-op job with each kind of limit (never reached). */
const VARIANTS = [
  { key: 'Plain', job: PlainJob },
  { key: 'Global', job: GlobalJob },
  { key: 'Rate', job: RateJob },
  { key: 'Group', job: GroupJob },
] as const;

interface Figures {
  claimMsPerJob: number;
  serverCpuUsPerJob?: number;
  commandsPerJob: number;
  jobsPerSec: number;
}

/**
 * One engine (its own store and database) works `jobs` queued no-op jobs of one variant: the time
 * spent inside `store.claim` per job, the server's CPU and the commands per job over the run.
 */
async function work(spec: FlowQueueCostSpec, client: MongoClient, variant: (typeof VARIANTS)[number]): Promise<Figures> {
  const database = `${spec.db}_queue_${variant.key.toLowerCase()}`;
  await client.db(database).dropDatabase();
  const store = new MongoStore({ client, database, logger: benchLogger });
  let claimMs = 0;
  const claim = store.claim.bind(store);
  store.claim = async (req: ClaimRequest): Promise<JobRecord[]> => {
    const t0 = performance.now();
    try {
      return await claim(req);
    } finally {
      claimMs += performance.now() - t0;
    }
  };
  let commands = 0;
  let counting = false;
  const count = (event: CommandStartedEvent): void => void (counting && event.databaseName === database && commands++);
  client.on('commandStarted', count);
  const loom = await Loom.create({
    container: new Container(),
    store,
    jobs: [variant.job],
    concurrency: spec.concurrency,
    logger: benchLogger,
    pollInterval: '200ms',
  });
  try {
    for (let i = 0; i < spec.jobs; i += 500) {
      await loom.enqueueMany(
        variant.job,
        Array.from({ length: Math.min(500, spec.jobs - i) }, (_, j) => ({ i: i + j })),
      );
    }
    const finished = new Promise<void>((resolve) => Object.assign(round, { ran: 0, expected: spec.jobs, done: resolve }));
    claimMs = 0;
    counting = true;
    const cpu0 = processCpuMs(spec.serverPid);
    const t0 = performance.now();
    await loom.start();
    await finished;
    const wallMs = performance.now() - t0;
    const cpu1 = processCpuMs(spec.serverPid);
    counting = false;
    return {
      claimMsPerJob: claimMs / spec.jobs,
      ...(cpu0 === undefined || cpu1 === undefined ? {} : { serverCpuUsPerJob: ((cpu1 - cpu0) * 1000) / spec.jobs }),
      commandsPerJob: commands / spec.jobs,
      jobsPerSec: (spec.jobs / wallMs) * 1000,
    };
  } finally {
    client.off('commandStarted', count);
    await loom.stop({ grace: '2s' });
    await store.close();
    await client.db(database).dropDatabase();
  }
}

/**
 * The claim cost of a queue as an engine pays it: one engine works a backlog of no-op jobs, claiming
 * as it does in production (as many jobs as it has room for, whenever runs end), once without limits
 * and once with each kind of limit, rounds alternating. Beside `flow-claim-cost`, which times claims
 * of a fixed size one after another, this counts the claims of every size the engine makes and the
 * freeing of slots at completion.
 */
export async function flowQueueCost(spec: FlowQueueCostSpec): Promise<ScenarioResult> {
  const client = new MongoClient(spec.uri, { monitorCommands: true });
  await client.connect();
  const figures = new Map<string, Figures[]>(VARIANTS.map((v) => [v.key, []]));
  try {
    for (let r = 0; r < spec.rounds; r++) for (const variant of VARIANTS) figures.get(variant.key)!.push(await work(spec, client, variant));
  } finally {
    await client.close();
  }
  const metrics: Record<string, number> = {};
  const plain = figures.get('Plain')!;
  for (const [key, runs] of figures) {
    for (const field of ['claimMsPerJob', 'serverCpuUsPerJob', 'commandsPerJob', 'jobsPerSec'] as const) {
      const values = runs.map((run) => run[field]).filter((v): v is number => v !== undefined);
      if (values.length > 0) metrics[`flowQueue${key}${field[0]!.toUpperCase()}${field.slice(1)}`] = median(values);
    }
    if (key === 'Plain') continue;
    metrics[`flowQueue${key}ClaimOverPlain`] = median(runs.map((run, i) => run.claimMsPerJob / plain[i]!.claimMsPerJob));
    const cpu = runs.flatMap((run, i) =>
      run.serverCpuUsPerJob === undefined || plain[i]!.serverCpuUsPerJob === undefined ? [] : [run.serverCpuUsPerJob / plain[i]!.serverCpuUsPerJob],
    );
    if (cpu.length > 0) metrics[`flowQueue${key}ServerCpuOverPlain`] = median(cpu);
  }
  return { metrics };
}
