import type { MongoClient, MongoClientOptions, WriteConcernSettings } from 'mongodb';
import { ConsoleLogger, LoomError, resolvePayloadLimits, toMs, type Duration, type Logger, type PayloadLimits } from '@loom/core';
import { StoreArgumentError } from './store-errors.js';

/** The part of Loom's (pino-compatible) {@link Logger} the store writes to. */
/** The most partitions a queue may have (option `partitions`). */
export const MAX_PARTITIONS = 1024;

export type StoreLogger = Pick<Logger, 'debug' | 'warn' | 'error'>;

/** How long finished work is kept before MongoDB's TTL monitor removes it; `false` keeps it forever. */
export interface RetentionOptions {
  /** Completed jobs, counted from `finishedAt`. @default '7d' */
  completed?: Duration | false;
  /** Dead letters, counted from `diedAt`. @default false (kept until purged or replayed) */
  dead?: Duration | false;
}

/** Options of {@link MongoStore}. Give exactly one of `url` and `client`. */
export interface MongoStoreOptions {
  /** Connection string; the store then owns the client and closes it in `close()`. */
  url?: string;
  /** Options for the client the store creates from `url`. */
  clientOptions?: MongoClientOptions;
  /** A client you own (share it to put your own writes and Loom's in one transaction). */
  client?: MongoClient;
  /** The database holding Loom's collections. */
  database: string;
  /** Prefix of every collection name. @default 'loom_' */
  collectionPrefix?: string;
  /** Write concern of every write outside transactions. @default { w: 'majority' } */
  writeConcern?: WriteConcernSettings;
  retention?: RetentionOptions;
  /**
   * `'retained'`: an idempotency key is taken while its job is in the jobs collection (until retention
   * removes it, or it dies). `'forever'`: a tombstone per key is kept, so a key is never reused.
   * @default 'retained'
   */
  dedupe?: 'retained' | 'forever';
  /** How often an engine without change streams should poll. The engine reads it. @default '1s' */
  pollInterval?: Duration;
  /** Where warnings (stream restarts, reconciliations) go. @default a ConsoleLogger at level info */
  logger?: StoreLogger;
  /**
   * How long `init()` may take to reach the server (connect and first round trip) before it fails
   * with `STORE_UNREACHABLE`, one line naming the hosts (never the password). The driver's own
   * timeouts still govern every later operation. @default '5s'
   */
  connectTimeout?: Duration;
  /**
   * How long one claim command may run on the server (its `maxTimeMS`). A worker that died inside
   * `ctx.transaction` leaves its transaction open until the server aborts it (60 s by default), and a
   * claim whose write reaches a job that transaction wrote waits for it; past this bound the claim
   * gives up, claims nothing this time (logged) and the engine claims again later. @default '5s'
   */
  claimTimeout?: Duration;
  /**
   * Queues split into partitions, by queue name: `{ emails: 16 }`. A partitioned queue's jobs are
   * spread over its partitions (by idempotency or debounce key when they have one, else evenly),
   * and engines claim partition by partition, so on a sharded cluster (shard key
   * `{ queue: 1, partition: 1 }`, see `loom shard-plan`) every command of a job reaches one shard.
   * Order (priority, then run time, then enqueue order) holds within a partition, not across.
   * Every process sharing the store must be given the same counts. Queues not listed have one
   * partition, and store and cost exactly what they did without this option. @default {}
   */
  partitions?: Record<string, number>;
  /**
   * Payloads and results larger than this many bytes (BSON) are kept in GridFS-layout collections
   * of the same database (`<prefix>payloads.files` / `.chunks`) instead of in the job's document:
   * claims and list pages of such jobs stay small, and values may pass MongoDB's 16 MiB document
   * limit (up to `maxPayloadSize`). Handlers, `jobs.get` and the dashboard get the value as if it
   * were inline; lists give its size. From 1 KiB to 4 MiB, or `false` to keep every value inline
   * (then at most 16 MiB). @default 262144 (256 KiB)
   */
  offloadThreshold?: number | false;
  /**
   * The largest payload or result accepted, in bytes (BSON): a larger payload is refused at
   * enqueue with `PAYLOAD_TOO_LARGE`, nothing stored. @default 67108864 (64 MiB)
   */
  maxPayloadSize?: number;
}

/** The options after defaults and validation. */
export interface ResolvedOptions {
  database: string;
  writeConcern: WriteConcernSettings;
  collections: {
    jobs: string;
    deadLetters: string;
    schedules: string;
    keys: string;
    queues: string;
    flow: string;
    counts: string;
    series: string;
    batches: string;
    waitTokens: string;
    workers: string;
    /** The payload bucket (GridFS layout): `<prefix>payloads.files` and `.chunks`. */
    payloadFiles: string;
    payloadChunks: string;
  };
  retentionSeconds: { completed: number | false; dead: number | false };
  dedupe: 'retained' | 'forever';
  pollIntervalMs: number;
  connectTimeoutMs: number;
  claimTimeoutMs: number;
  partitions: Record<string, number>;
  logger: StoreLogger;
  payloadLimits: PayloadLimits;
}

function bad(option: string, detail: string): LoomError {
  return new StoreArgumentError(`MongoStore option "${option}" ${detail}`);
}

function retentionSeconds(option: string, value: Duration | false | undefined, fallback: Duration | false): number | false {
  const chosen = value === undefined ? fallback : value;
  if (chosen === false) return false;
  let ms: number;
  try {
    ms = toMs(chosen);
  } catch (err) {
    throw bad(option, `must be a duration such as '7d' or false to keep forever: ${(err as Error).message}`);
  }
  // TTL indexes count whole seconds; a zero TTL would delete finished work at once.
  if (ms < 1000) throw bad(option, 'must be at least 1s (or false to keep forever)');
  return Math.round(ms / 1000);
}

/** Applies defaults; throws INVALID_ARGUMENT naming the option on a bad value. */
export function resolveOptions(options: MongoStoreOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw bad('(options)', 'must be an object');
  if ((options.url === undefined) === (options.client === undefined)) throw bad('url/client', 'needs exactly one of url and client');
  if (options.url !== undefined && typeof options.url !== 'string') throw bad('url', 'must be a string');
  if (typeof options.database !== 'string' || options.database === '') throw bad('database', 'must be a non-empty string');
  const prefix = options.collectionPrefix ?? 'loom_';
  if (typeof prefix !== 'string' || /[$\0]/.test(prefix)) throw bad('collectionPrefix', 'must be a string without "$" or NUL');
  const dedupe = options.dedupe ?? 'retained';
  if (dedupe !== 'retained' && dedupe !== 'forever') throw bad('dedupe', "must be 'retained' or 'forever'");
  let pollIntervalMs: number;
  try {
    pollIntervalMs = toMs(options.pollInterval ?? '1s');
  } catch (err) {
    throw bad('pollInterval', (err as Error).message);
  }
  let connectTimeoutMs: number;
  try {
    connectTimeoutMs = toMs(options.connectTimeout ?? '5s');
  } catch (err) {
    throw bad('connectTimeout', (err as Error).message);
  }
  if (connectTimeoutMs <= 0) throw bad('connectTimeout', 'must be more than 0');
  let claimTimeoutMs: number;
  try {
    claimTimeoutMs = toMs(options.claimTimeout ?? '5s');
  } catch (err) {
    throw bad('claimTimeout', (err as Error).message);
  }
  // maxTimeMS is a whole number of milliseconds, and 0 would mean "no limit" to the server.
  if (!Number.isInteger(claimTimeoutMs) || claimTimeoutMs < 1) throw bad('claimTimeout', 'must be a whole number of milliseconds, at least 1ms');
  const partitions = options.partitions ?? {};
  if (typeof partitions !== 'object' || partitions === null || Array.isArray(partitions))
    throw bad('partitions', 'must be an object of queue name to partition count, e.g. { emails: 16 }');
  for (const [queue, count] of Object.entries(partitions)) {
    if (!Number.isInteger(count) || count < 1 || count > MAX_PARTITIONS)
      throw bad(`partitions.${queue}`, `must be a whole number from 1 to ${MAX_PARTITIONS}, got ${String(count)}`);
  }
  return {
    database: options.database,
    writeConcern: options.writeConcern ?? { w: 'majority' },
    collections: {
      jobs: `${prefix}jobs`,
      deadLetters: `${prefix}dead_letters`,
      schedules: `${prefix}schedules`,
      keys: `${prefix}idempotency_keys`,
      queues: `${prefix}queues`,
      flow: `${prefix}flow`,
      counts: `${prefix}queue_counts`,
      series: `${prefix}queue_series`,
      batches: `${prefix}batches`,
      waitTokens: `${prefix}wait_tokens`,
      workers: `${prefix}workers`,
      payloadFiles: `${prefix}payloads.files`,
      payloadChunks: `${prefix}payloads.chunks`,
    },
    retentionSeconds: {
      completed: retentionSeconds('retention.completed', options.retention?.completed, '7d'),
      dead: retentionSeconds('retention.dead', options.retention?.dead, false),
    },
    dedupe,
    pollIntervalMs,
    connectTimeoutMs,
    claimTimeoutMs,
    partitions: { ...partitions },
    logger: options.logger ?? new ConsoleLogger({ bindings: { component: 'mongo-store' } }),
    payloadLimits: resolvePayloadLimits('MongoStore', { offloadThreshold: options.offloadThreshold, maxPayloadSize: options.maxPayloadSize }),
  };
}
