import { Container } from 'inversify';
import { MongoClient, type CommandStartedEvent } from 'mongodb';
import { Loom } from '@loom/core';
import { MongoEmulator } from '@loom/mongo-emulator';
import { MongoStore, shardPlan } from '@loom/mongo-store';
import { Countdown } from '../countdown.js';
import { benchLogger, NoopJob } from '../loom-jobs.js';

/**
 * Scaling out (`--only sharded`): Loom on the emulator's sharded cluster simulation, 4 virtual
 * shards, one queue of 16 partitions, its jobs collection sharded as `loom shard-plan` prints;
 * against the same run on the emulator's replica set. Both emulators run in this process, so the
 * throughput ratio compares the two set-ups on one machine, not MongoDB figures.
 */
export interface ShardedSpec {
  jobs: number;
  partitions: number;
  shards: number;
  concurrency: number;
  chunk: number;
  idleSeconds: number;
  timeoutMs: number;
}

export interface ShardedFigures {
  metrics: Record<string, number>;
  notes: string[];
}

interface NsStats {
  ns: string;
  targeted: Record<string, number>;
  broadcast: Record<string, number>;
  shards: Record<string, { targeted: Record<string, number>; broadcast: Record<string, number> }>;
}

const sum = (counts: Record<string, number>): number => Object.values(counts).reduce((a, b) => a + b, 0);
const DATABASE = 'bench_sharded';
/** Commands of the change streams and the connection, not of a job's life or of polling. */
const NOT_POLLING = new Set(['hello', 'ismaster', 'isMaster', 'endSessions', 'ping', 'getMore', 'killCursors']);

async function openCluster(spec: ShardedSpec, shards: number | undefined, partitions: number) {
  const emulator = await MongoEmulator.start({ port: 0, ttlIntervalMs: 0, ...(shards === undefined ? {} : { shards, version: '7.0' }) });
  const client = new MongoClient(emulator.uri, { monitorCommands: true });
  await client.connect();
  if (shards !== undefined) {
    const names = ((await client.db('admin').command({ listShards: 1 })).shards as { _id: string }[]).map((s) => s._id);
    for (const { db, command } of shardPlan({ database: DATABASE, partitions: { default: partitions }, shards: names })) {
      await (db === 'admin' ? client.db('admin') : client.db(DATABASE)).command(command).catch((err: unknown) => {
        if (!('dropIndexes' in command)) throw err;
      });
    }
  }
  const store = new MongoStore({ client, database: DATABASE, logger: benchLogger, ...(partitions > 1 ? { partitions: { default: partitions } } : {}) });
  const loom = await Loom.create({ container: new Container(), store, jobs: [NoopJob], concurrency: spec.concurrency, logger: benchLogger });
  return {
    emulator,
    client,
    loom,
    async close() {
      await loom.stop({ grace: '5s' });
      await store.close();
      await client.close();
      await emulator.stop();
    },
  };
}

/** Enqueues `jobs` in chunks, then runs them all: jobs per second of the processing phase. */
async function throughput(spec: ShardedSpec, loom: Loom): Promise<number> {
  for (let i = 0; i < spec.jobs; i += spec.chunk) {
    const n = Math.min(spec.chunk, spec.jobs - i);
    await loom.enqueueMany(
      NoopJob,
      Array.from({ length: n }, (_, j) => ({ i: i + j })),
    );
  }
  const done = new Countdown(spec.jobs, 'sharded completions');
  loom.on('job:completed', () => done.tick());
  const t0 = performance.now();
  await loom.start();
  await done.wait(spec.timeoutMs);
  return (spec.jobs / (performance.now() - t0)) * 1000;
}

/** Commands per second an idle engine sends (change-stream getMores aside), with `partitions` partitions. */
async function idleCommandsPerSec(spec: ShardedSpec, partitions: number): Promise<number> {
  const c = await openCluster(spec, spec.shards, partitions);
  try {
    await c.loom.start();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    let commands = 0;
    c.client.on('commandStarted', (e: CommandStartedEvent) => {
      if (!NOT_POLLING.has(e.commandName)) commands++;
    });
    await new Promise((resolve) => setTimeout(resolve, spec.idleSeconds * 1000));
    return commands / spec.idleSeconds;
  } finally {
    await c.close();
  }
}

export async function measureSharded(spec: ShardedSpec): Promise<ShardedFigures> {
  const plain = await openCluster(spec, undefined, 1);
  let unshardedPerSec: number;
  try {
    unshardedPerSec = await throughput(spec, plain.loom);
  } finally {
    await plain.close();
  }

  const sharded = await openCluster(spec, spec.shards, spec.partitions);
  let shardedPerSec: number;
  let jobs: NsStats;
  try {
    sharded.emulator.resetShardStats();
    shardedPerSec = await throughput(spec, sharded.loom);
    jobs = (sharded.emulator.shardStats() as { namespaces: NsStats[] }).namespaces.find((n) => n.ns === `${DATABASE}.loom_jobs`)!;
  } finally {
    await sharded.close();
  }
  // Meant to reach every shard: the claim probe (an aggregate on the claim index, partition-claims.ts)
  // and the change stream's getMores (a sharded change stream merges every shard); neither is a job's command.
  const { aggregate: probes = 0, getMore: streamReads = 0, ...hotBroadcast } = jobs.broadcast;
  const targeted = sum(jobs.targeted);
  const hotTargetedShare = targeted / (targeted + sum(hotBroadcast));
  const perShard = Object.values(jobs.shards).map((s) => sum(s.targeted) + sum(s.broadcast));
  const even = perShard.reduce((a, b) => a + b, 0) / spec.shards;

  const idle16 = await idleCommandsPerSec(spec, spec.partitions);
  const idle1 = await idleCommandsPerSec(spec, 1);
  return {
    metrics: {
      hotPathTargetedShare: hotTargetedShare,
      allTargetedShare: targeted / (targeted + sum(jobs.broadcast)),
      probeCommands: probes,
      changeStreamGetMores: streamReads,
      busiestShardOverEven: Math.max(...perShard) / even,
      shardedJobsPerSec: shardedPerSec,
      unshardedJobsPerSec: unshardedPerSec,
      throughputRatio: shardedPerSec / unshardedPerSec,
      idleCommandsPerSecPartitioned: idle16,
      idleCommandsPerSecOnePartition: idle1,
    },
    notes: [
      `jobs collection on ${spec.shards} virtual shards, queue of ${spec.partitions} partitions: ${targeted} commands targeted, broadcast ${JSON.stringify(jobs.broadcast)}; per shard ${perShard.join(' / ')}`,
      `hot-path broadcast besides the claim probe and the change stream: ${JSON.stringify(hotBroadcast)}`,
    ],
  };
}
