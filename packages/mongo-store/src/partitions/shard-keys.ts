import type { Document, MongoClient } from 'mongodb';
import type { Deployment } from '../connection/deployment.js';
import type { ResolvedOptions } from '../options.js';
import { ShardKeyError } from '../store-errors.js';
import { JOBS_SHARD_KEY, shardedUniqueIndexes } from '../schema/indexes.js';

export { JOBS_SHARD_KEY };

/** The index backing {@link JOBS_SHARD_KEY} (MongoDB needs one before `shardCollection` of a collection with data). */
export const SHARD_KEY_INDEX = 'loom_shard_key';

/**
 * Why the other collections stay unsharded (they live on the database's primary shard, and a
 * command on them reaches that one shard): dead letters, key tombstones, flow documents,
 * schedules and queue documents are written once per death, per keyed enqueue with
 * `dedupe: 'forever'`, per limited start, per cron slot or per pause, and read by operators. If
 * you shard one anyway, its key must be `{ _id: 1 }` or `{ _id: 'hashed' }`, the field each is
 * written by.
 */
const OTHER_COLLECTION_KEYS = ['{ _id: 1 }', "{ _id: 'hashed' }"];

/** One command of a sharding plan: run it with `db.adminCommand` (`admin`) or `db.runCommand` (the database). */
export interface ShardPlanCommand {
  db: 'admin' | 'database';
  command: Document;
}

export interface ShardPlanOptions {
  database: string;
  /** Prefix of Loom's collections. @default 'loom_' */
  collectionPrefix?: string;
  /** Partitions of each queue to spread over the shards, e.g. `{ default: 16 }`. */
  partitions: Record<string, number>;
  /** The shards to spread partitions over, in order (`listShards`); without them no chunk is moved. */
  shards?: string[];
}

/**
 * The commands that shard Loom's jobs collection for `partitions`: the indexes the shard key needs
 * (idempotency and debounce keys become unique per queue, prefixed by the shard key, as MongoDB
 * requires of a unique index on a sharded collection), `shardCollection` on
 * `{ queue: 1, partition: 1 }`, then one chunk per partition, partition `p` of the `q`th queue on
 * shard `(q + p) mod shards` (ranged keys start as one chunk; MongoDB's balancer would spread them too,
 * but only by size, and late). Run them before Loom's first start on the database, or with Loom
 * stopped (the dropped unique indexes are recreated prefixed by the shard key).
 */
export function shardPlan(options: ShardPlanOptions): ShardPlanCommand[] {
  const prefix = options.collectionPrefix ?? 'loom_';
  const jobs = `${prefix}jobs`;
  const ns = `${options.database}.${jobs}`;
  const plan: ShardPlanCommand[] = [
    { db: 'admin', command: { enableSharding: options.database } },
    { db: 'database', command: { dropIndexes: jobs, index: 'loom_idempotency_key' } },
    { db: 'database', command: { dropIndexes: jobs, index: 'loom_debounce' } },
    {
      db: 'database',
      command: {
        createIndexes: jobs,
        indexes: [{ name: SHARD_KEY_INDEX, key: { ...JOBS_SHARD_KEY } }, ...shardedUniqueIndexes()],
      },
    },
    { db: 'admin', command: { shardCollection: ns, key: { ...JOBS_SHARD_KEY } } },
  ];
  const shards = options.shards ?? [];
  for (const [index, [queue, count]] of Object.entries(options.partitions).entries()) {
    for (let partition = 0; partition < count; partition++) {
      // Partition 0 stores no `partition` field (null in the shard key), which sorts before 1.
      const middle = { queue, partition: partition === 0 ? null : partition };
      plan.push({ db: 'admin', command: { split: ns, middle } });
      if (shards.length > 0) plan.push({ db: 'admin', command: { moveChunk: ns, find: middle, to: shards[(index + partition) % shards.length] } });
    }
  }
  return plan;
}

/** What `init()` found out about sharding. */
export interface ShardingState {
  /** Connected through mongos. */
  mongos: boolean;
  /** The jobs collection is sharded (on {@link JOBS_SHARD_KEY}). */
  jobsSharded: boolean;
}

/**
 * Checks the shard keys of Loom's collections on a sharded cluster: the jobs collection may be
 * unsharded or sharded on {@link JOBS_SHARD_KEY}, the others unsharded or sharded on `_id`. A
 * collection sharded otherwise is refused (`SHARD_KEY_MISMATCH`): Loom's commands could not be
 * targeted (before MongoDB 7.1 its claims would be refused outright). Off mongos (`deployment`, from
 * the `hello` `init()` already sent) nothing is read.
 */
export async function verifyShardKeys(
  client: MongoClient,
  options: Pick<ResolvedOptions, 'database' | 'collections'>,
  deployment: Deployment,
): Promise<ShardingState> {
  if (!deployment.mongos) return { mongos: false, jobsSharded: false };
  const { database, collections } = options;
  const names = Object.values(collections).map((name) => `${database}.${name}`);
  const found = await client
    .db('config')
    .collection<{ _id: string; key: Document; dropped?: boolean; unsplittable?: boolean }>('collections')
    .find({ _id: { $in: names } })
    .toArray();
  let jobsSharded = false;
  for (const entry of found) {
    // MongoDB 8.0 lists unsharded collections too, as `unsplittable`.
    if (entry.dropped === true || entry.unsplittable === true) continue;
    const key = JSON.stringify(entry.key);
    if (entry._id === `${database}.${collections.jobs}`) {
      if (key !== JSON.stringify(JOBS_SHARD_KEY)) {
        throw new ShardKeyError(
          `MongoStore cannot start: collection ${entry._id} is sharded on ${key}, and Loom's commands target the shard key {"queue":1,"partition":1}. ` +
            `A shard key cannot be changed in place: reshard it (MongoDB 5.0+: db.adminCommand({ reshardCollection: '${entry._id}', key: { queue: 1, partition: 1 } })) ` +
            `or give Loom another database or collectionPrefix; \`loom shard-plan --database ${database}\` prints the commands that shard Loom's collections.`,
        );
      }
      jobsSharded = true;
    } else if (!['{"_id":1}', '{"_id":"hashed"}'].includes(key)) {
      throw new ShardKeyError(
        `MongoStore cannot start: collection ${entry._id} is sharded on ${key}; Loom writes it by _id, so it must stay unsharded (recommended: it is small) ` +
          `or be sharded on ${OTHER_COLLECTION_KEYS.join(' or ')}. Unshard it (MongoDB 8.0+: db.adminCommand({ unshardCollection: '${entry._id}' })) or reshard it on _id; ` +
          `\`loom shard-plan --database ${database}\` prints the commands that shard Loom's collections.`,
      );
    }
  }
  return { mongos: true, jobsSharded };
}
