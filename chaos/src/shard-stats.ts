import type { MongoClient } from 'mongodb';
import { shardPlan } from '@loom/mongo-store';

/**
 * A sharded chaos run (`--sharded`): the set-up a user runs (`loom shard-plan`'s commands) and the
 * routing figures read back from the emulator's `{ loomShardStats: 1 }` (see
 * packages/mongo-emulator/README.md, "Routing counts").
 */

/** The emulator's routing counts of one namespace, as `loomShardStats` reports them. */
export interface NamespaceStats {
  ns: string;
  sharded: boolean;
  targeted: Record<string, number>;
  broadcast: Record<string, number>;
  shards: Record<string, { targeted: Record<string, number>; broadcast: Record<string, number> }>;
}

/** `{ loomShardStats: 1 }`'s answer (the parts read here). */
export interface ShardStats {
  shards: string[];
  namespaces: NamespaceStats[];
}

/**
 * The write commands. Everything Loom writes on its hot path is one of them (each statement of a
 * batch counted apart); reads are left out: a change stream and a short claim's probe for
 * unannounced partitions reach every shard by design, and the controller's own progress counts
 * and the oracle's reads are not the engines'.
 */
const WRITES = ['insert', 'update', 'delete', 'findAndModify'];

export interface ShardFigures {
  shards: number;
  partitions: number;
  /** Write statements on the run's database that reached one shard. */
  writesTargeted: number;
  /** Write statements on the run's database that reached more than one shard (must be 0). */
  writesBroadcast: number;
  /** The broadcast writes by `collection.command`, for the report. */
  broadcastWrites: Record<string, number>;
  /** The broadcast reads by `collection.command` (information: see {@link WRITES}). */
  broadcastReads: Record<string, number>;
  /** Commands that reached each shard of the jobs collection, targeted or not. */
  jobsPerShard: Record<string, number>;
}

const sum = (counts: Record<string, number>): number => Object.values(counts).reduce((a, b) => a + b, 0);

/** The figures of `database` in `stats` (a run whose queues have `partitions` partitions). */
export function shardFigures(stats: ShardStats, database: string, partitions: number, jobsCollection = 'loom_jobs'): ShardFigures {
  const figures: ShardFigures = {
    shards: stats.shards.length,
    partitions,
    writesTargeted: 0,
    writesBroadcast: 0,
    broadcastWrites: {},
    broadcastReads: {},
    jobsPerShard: Object.fromEntries(stats.shards.map((s) => [s, 0])),
  };
  for (const ns of stats.namespaces) {
    if (!ns.ns.startsWith(`${database}.`)) continue;
    const collection = ns.ns.slice(database.length + 1);
    for (const [command, n] of Object.entries(ns.targeted)) if (WRITES.includes(command)) figures.writesTargeted += n;
    for (const [command, n] of Object.entries(ns.broadcast)) {
      const into = WRITES.includes(command) ? figures.broadcastWrites : figures.broadcastReads;
      into[`${collection}.${command}`] = n;
      if (WRITES.includes(command)) figures.writesBroadcast += n;
    }
    if (collection === jobsCollection)
      for (const [shard, counts] of Object.entries(ns.shards)) figures.jobsPerShard[shard] = sum(counts.targeted) + sum(counts.broadcast);
  }
  return figures;
}

/** The figures the verdict line gains in a sharded run. */
export function shardLine(f: ShardFigures): string {
  return `shards=${f.shards} partitions=${f.partitions} writes_targeted=${f.writesTargeted} writes_broadcast=${f.writesBroadcast}`;
}

/** The run's routing passed: no write reached more than one shard (and there were writes to count). */
export function shardsPassed(f: ShardFigures): boolean {
  return f.writesBroadcast === 0 && f.writesTargeted > 0;
}

/** The report's lines: where the broadcasts came from, and how evenly the jobs collection's commands spread. */
export function shardReport(f: ShardFigures): string[] {
  const list = (counts: Record<string, number>) =>
    Object.keys(counts).length === 0
      ? 'none'
      : Object.entries(counts)
          .map(([k, n]) => `${k} ${n}`)
          .join(', ');
  const perShard = Object.values(f.jobsPerShard);
  const even = sum(f.jobsPerShard) / Math.max(1, perShard.length);
  const busiest = even > 0 ? Math.max(...perShard) / even : 0;
  return [
    `writes reaching more than one shard: ${list(f.broadcastWrites)}; reads reaching more than one shard (change streams, claim probes, the controller's counts): ${list(f.broadcastReads)}`,
    `commands on the jobs collection per shard: ${list(f.jobsPerShard)} (busiest ${busiest.toFixed(2)}x the even share)`,
  ];
}

/**
 * Shards `database` for `partitions` as an operator would: the commands `loom shard-plan
 * --database <database> --partitions N --shards <listShards>` prints, run in order against mongos
 * before Loom's first start. A `dropIndexes` of a collection or index that does not exist yet is
 * what a first set-up meets, and harmless.
 */
export async function shardDatabase(client: MongoClient, database: string, partitions: Record<string, number>): Promise<number> {
  const admin = client.db('admin');
  const { shards } = (await admin.command({ listShards: 1 })) as { shards: { _id: string }[] };
  const plan = shardPlan({ database, partitions, shards: shards.map((s) => s._id) });
  for (const { db, command } of plan) {
    try {
      await (db === 'admin' ? admin : client.db(database)).command(command);
    } catch (err) {
      const code = (err as { code?: number }).code;
      // 26: NamespaceNotFound, 27: IndexNotFound.
      if (!('dropIndexes' in command && (code === 26 || code === 27))) throw err;
    }
  }
  return plan.length;
}

/** The emulator's routing counts, read (and, with `reset`, cleared) by `{ loomShardStats: 1 }`. */
export async function readShardStats(client: MongoClient, reset = false): Promise<ShardStats> {
  return (await client.db('admin').command({ loomShardStats: 1, ...(reset ? { reset: true } : {}) })) as unknown as ShardStats;
}
