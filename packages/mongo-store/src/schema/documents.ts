import type { Binary, ObjectId } from 'mongodb';
import type { BatchCallbackJobs, JobRecord, ScheduleDescription, SignalRecord, WaitTokenRecord, WorkerPresence } from '@loom/core';

/**
 * A job as stored in the `jobs` collection: the fields of `JobRecord`, with an ObjectId `_id` that
 * the store turns into its hex string at the `JobStore` boundary.
 */
export interface JobDocument extends Omit<JobRecord, 'id' | 'signals' | 'offloadedPayload' | 'offloadedResult'> {
  _id: ObjectId;
  /** The payload, when it is kept in the payload bucket (over `offloadThreshold`; `payload` is then null). See offloaded-values.ts. */
  payloadRef?: StoredValueRef;
  /** The result, when it is kept in the payload bucket (`result` is then absent). */
  resultRef?: StoredValueRef;
  /** The job's partition in its queue (MongoStore option `partitions`); absent for partition 0. Never changes. */
  partition?: number;
  /** A child's parent's queue and partition (absent: 0), so waking the parent reaches its shard. */
  parentQueue?: string;
  parentPartition?: number;
  /**
   * The instant the job becomes claimable, present only while it can become claimable:
   * `runAt` when queued, `lease.until + 1 ms` when running (a lease is expired strictly after
   * `until`, and BSON dates have millisecond precision), the timeout when waiting with one.
   * One field lets one partial index answer every claim, whatever the state.
   */
  claimAt?: Date;
  signals: StoredSignal[];
  /**
   * The key a claim serves the job's name by, in turns: `groupKey`, else `rateLimitKey`. Indexed
   * (`loom_flow_key`) so a claim finds the next key's best job without scanning other keys.
   */
  flowKey?: string;
  /** Retention holds (see retention-holds.ts): a child whose parent has not finished. */
  holdForParent?: true;
  /** Set while the job has dependents that its end has not been applied to (dependencies.ts). */
  dependentsOpen?: true;
  /**
   * On a partitioned deployment, the routes (queue, partition) of `dependents`, by id: the settle
   * writes each dependent on its one shard, whichever process runs it (dependencies.ts).
   */
  dependentRoutes?: Record<string, { queue: string; partition: number }>;
  /** Retention holds: `dedupe: 'forever'` and the key's tombstone is not final yet. */
  holdForKey?: true;
  /** A held completed job's finish time; `finishedAt` is absent until every hold is released. */
  heldFinishedAt?: Date;
  /**
   * A completed job's last lease, moved here by the completion itself (`$rename`, per job, so one
   * statement completes many): which token completed it, for a batch that must tell its own
   * completions from another token's (see complete-many.ts).
   */
  completedLease?: JobRecord['lease'];
}

/** Where an offloaded value is (a file of the payload bucket) and its size in bytes (BSON). */
export interface StoredValueRef {
  fileId: ObjectId;
  size: number;
}

/**
 * A file of the payload bucket (payloads/offloaded-values.ts), GridFS layout. `metadata.jobId`: the
 * job that references it; `metadata.checkAt`: when the orphan sweep next asks that job whether it does.
 */
export interface ValueFileDocument {
  _id: ObjectId;
  length: number;
  chunkSize: number;
  uploadDate: Date;
  filename: string;
  metadata: { jobId: ObjectId; kind: 'payload' | 'result'; checkAt: Date };
}

/** A chunk of a file (GridFS layout). */
export interface ValueChunkDocument {
  _id: ObjectId;
  files_id: ObjectId;
  n: number;
  data: Binary;
}

/** A signal plus a store-generated id, so one stored signal can be taken off atomically by id. */
export interface StoredSignal extends SignalRecord {
  sid: ObjectId;
}

/** A dead job in the dead-letter collection. `_id` is the job's `_id`, which makes the move idempotent. */
export interface DeadLetterDocument {
  _id: ObjectId;
  name: string;
  queue: string;
  reason: string;
  diedAt: Date;
  /** The token of the lease that moved it: lets a restart tell a half-done move from a stale one. */
  leaseToken: string;
  /** Fields dropped because the whole record would not fit in one document (see `fitDeadLetter`). */
  truncated?: string[];
  /**
   * Set while a move on a standalone (two writes, no transaction) is under way: `'move'` from the
   * dead letter's write until the job's deletion, `'replay'` from the replay's start until the
   * letter's deletion. A crash leaves it set, and `init()` reconciles exactly those letters.
   */
  pending?: 'move' | 'replay';
  job: Omit<JobDocument, '_id'>;
}

/** Per-schedule cron state; `_id` is the schedule (job) name. */
export interface ScheduleDocument {
  _id: string;
  lastFireAt: Date | null;
  firstSeenAt: Date;
  /** See `ScheduleRecord.firing`; absent in documents written before it existed. */
  firing?: Date[];
  paused: boolean;
  updatedAt: Date;
  description?: ScheduleDescription;
}

/** A queue's persisted controls; `_id` is the queue name. Queues without one are not paused. */
export interface QueueDocument {
  _id: string;
  paused: boolean;
  updatedAt: Date;
}

/**
 * How many jobs of queue `q` completed in the finish-time bucket starting at `b` (ms since the
 * epoch; 0 when retention of completed jobs is off: one bucket for all time). `e`, the bucket's
 * end, is what the TTL index of the collection expires it by, one retention period after the last
 * job it counts was due for removal.
 */
export interface CompletedCountDocument {
  _id: { q: string; b: number };
  q: string;
  n: number;
  e?: Date;
}

/**
 * One bucket of one queue's series (`queue-series.ts`): `_id` names queue, resolution and start (ms);
 * completed, failed, dead, started, summed wait (ms), the largest depth sampled, and when it expires.
 */
export interface SeriesDocument {
  _id: { q: string; r: string; s: number };
  q: string;
  r: string;
  s: number;
  c?: number;
  f?: number;
  d?: number;
  st?: number;
  w?: number;
  dp?: number;
  x: Date;
}

/** `dedupe: 'forever'`: one document per idempotency key ever used; `_id` is the key. */
export interface KeyTombstoneDocument {
  _id: string;
  jobId: ObjectId;
  at: Date;
  /** Written before the job; removed once the job holding the key is stored (key-tombstones.ts). */
  pending?: true;
}

/**
 * A flow-control document's id: a job name (`{ n }`: its global concurrency, unkeyed rate limit
 * and holds), one group key of it (`{ n, g }`), or one rate-limit key (`{ n, r }`). Always built
 * by `flowId` in this field order, since ids that are documents match only field by field.
 */
export type FlowId = { n: string; g?: string; r?: string };

/**
 * The flow-control state of a name or key, in the flow collection. Every change is one atomic
 * update of this one document, so engines sharing the store never see it half-changed.
 */
export interface FlowDocument {
  _id: FlowId;
  /** Concurrency slots taken: one per running job, its lease token and lease end (`u`, kept by heartbeats). */
  h?: { t: string; u: Date }[];
  /**
   * Rate-limit starts, one entry per grant: the tokens of its runs (`t`), how many (`c`), and when
   * they started (`a`). One entry per grant rather than per start keeps the document (rewritten by
   * every grant) as small as the grants in a window, not the starts. Grants that left the window
   * stay until `STALE_STARTS_KEPT` of them have (flow-permits.ts); only those in it count.
   */
  s?: { t: string[]; c: number; a: Date }[];
  /** The latest `now` a rate-limit window was judged at: starts are granted in time order. */
  t?: Date;
  /** No start before this instant (`holdFlow`, a `RateLimitedError`). */
  b?: Date;
  /** The limits of the last grant (concurrency `c`, `r` starts per `p` ms): what `heldBy` on job pages judges by. */
  l?: { c?: number; r?: number; p?: number };
  /**
   * Full until this instant at the earliest (set by a grant that left no room, and by a hold;
   * removed whenever a slot or start goes back): claims of keyed names skip such keys unread. Only
   * ever early, never late: a key past `f` is asked again, and a grant recomputes it.
   */
  f?: Date;
}

/** A batch as stored; `_id` is the id `createBatch` returned. */
export interface BatchDocument {
  _id: ObjectId;
  total: number;
  completed: number;
  dead: number;
  cancelled: number;
  /** Which stripes hold the counts until the batch finishes (absent on batches stored before stripes, which count here). */
  stripes?: number[];
  /** How many of those stripes have every member ended. */
  stripesDone?: number;
  createdAt: Date;
  finishedAt?: Date;
  /** The callbacks' jobs as the engine gave them (without idempotency keys). */
  callbacks: BatchCallbackJobs;
}
/** One stripe of a batch's counts (batches/batches.ts), in the batches collection beside its batch. */
export interface BatchStripeDocument {
  /** `<batch id>/<stripe>`. */
  _id: string;
  /** Members of the batch in this stripe. */
  total: number;
  completed: number;
  dead: number;
  cancelled: number;
  /** Set when the batch finished: the stripe counts no more. */
  finished?: true;
}
/** A wait token (`ctx.createWaitToken`): the core record with its id as `_id`. */
/** `jobRoute`: the job's queue and partition, kept on a partitioned deployment (wait-tokens.ts). */
export type WaitTokenDocument = Omit<WaitTokenRecord, 'id'> & { _id: string; jobRoute?: { queue: string; partition: number } };

/** An engine's presence row (`recordPresence`): the core record with the engine id as `_id`. */
export type WorkerDocument = Omit<WorkerPresence, 'id'> & { _id: string };
