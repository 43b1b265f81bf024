/**
 * `@loom/mongo-store`: Loom's durable {@link JobStore} on MongoDB.
 *
 * ```ts
 * import { MongoStore } from '@loom/mongo-store';
 * const store = new MongoStore({ url: process.env.MONGODB_URI!, database: 'app' });
 * const loom = await Loom.create({ container, store });
 * ```
 *
 * @packageDocumentation
 */
export { MongoStore } from './mongo-store.js';
export type { MongoStoreOptions, RetentionOptions, StoreLogger } from './options.js';
export type { ReconcileReport } from './dead-letters/dead-letters.js';
export { indexPlan, verifyIndexes, WORKERS_EXPIRY_INDEX, type IndexSpec } from './schema/indexes.js';
export { shardPlan, JOBS_SHARD_KEY, type ShardPlanCommand, type ShardPlanOptions } from './partitions/shard-keys.js';
