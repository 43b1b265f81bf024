/**
 * The MemoryStore's state: every map and index the parts of the store read and change (claims,
 * writes, queries, job control, dead letters, retention). One object, shared by reference: no part
 * keeps a copy of another's data. A job's status, and which map keeps it, change only in
 * `transition.ts` (by a row of the lifecycle table), but for finished jobs leaving the store:
 * retention (`retention.ts`) and purged dead letters (`dead-letters.ts`).
 */
import { randomUUID } from 'node:crypto';
import type { JobRecord } from '../job-record.js';
import { ActiveJobs } from './active-jobs.js';
import { BatchTable } from './batch-table.js';
import type { WaitTokenRecord } from '../wait-token.js';
import { ClaimIndex } from './claim-index.js';
import { DebounceKeys } from './debounce.js';
import { FlowTable } from './flow-table.js';
import { JobList } from './job-list.js';
import { QueuedListeners } from './queued-listeners.js';
import { ScheduleTable } from './schedule-table.js';
import { SeriesBuckets } from '../queue-series.js';
import { SecondaryIndex } from './secondary-index.js';
import { StatusCounts } from './status-counts.js';
import type { StoredJob } from './stored-job.js';

/** A dead letter as held inside the store. */
export interface DeadEntry {
  job: StoredJob;
  reason: string;
  diedAt: Date;
}

/** How long finished jobs are kept (ms); undefined: forever. */
export interface RetentionMs {
  completed?: number;
  dead?: number;
}

// Records drop their lease by setting it to undefined, never with `delete`: deleting a property turns
// the object into a slow dictionary-mode one, and for every finished job kept in memory that cost
// about 1 KB of old-space garbage and slower copies. copyRecord drops undefined fields on the way out.

export class MemoryState {
  /** Every job the store holds, whatever its state, by id. */
  readonly jobs = new Map<string, StoredJob>();
  /** `queued`, `running` and `waiting` jobs, by name. */
  readonly active = new ActiveJobs(this.jobs);
  /** Completed jobs, in completion order (retention removes from the front). */
  readonly completed = new JobList<StoredJob>();
  /** Completed children past their retention, kept until their parent finishes (it may still wait for them). */
  readonly held = new Map<string, StoredJob>();
  /** Dead letters, in the order they died. */
  readonly dead = new Map<string, DeadEntry>();
  /** Cancelled jobs (kept until removed or retried). */
  readonly cancelled = new Map<string, StoredJob>();
  /** Queues whose jobs claims skip. */
  readonly paused = new Set<string>();
  /** Idempotency key → id of the active, completed or cancelled job holding it. */
  readonly keys = new Map<string, string>();
  readonly index = new ClaimIndex();
  readonly flow = new FlowTable();
  readonly debounce = new DebounceKeys();
  /** Active, completed and cancelled jobs by parent id (a parent's children). */
  readonly byParent = new SecondaryIndex();
  /** Active jobs by parent id (`findActiveChild`). */
  readonly activeByParent = new SecondaryIndex();
  /** Jobs per queue and status, but dead ones (counted by `dead`). */
  readonly counts = new StatusCounts();
  readonly schedules = new ScheduleTable();
  readonly batches = new BatchTable();
  /** Wait tokens by id (removed with their job: `dropWaitTokens`). */
  readonly waitTokens = new Map<string, WaitTokenRecord>();
  /** Wait token ids by job id, in creation order. */
  readonly waitTokensByJob = new Map<string, string[]>();
  /** Per-queue counts in time buckets (`queueSeries`): starts counted by claims, outcomes by the writes of runs. */
  readonly series = new SeriesBuckets();
  /** Finished jobs with dependents not settled yet (`settleDependents`), in the order they finished. */
  readonly unsettled = new Set<string>();
  /** The last enqueue order handed out (see {@link StoredJob.seq}). */
  seq = 0;
  /** Lease tokens are this store's random prefix and a claim counter (see {@link leaseToken}). */
  readonly #tokenPrefix = `${randomUUID()}:`;
  #claims = 0;

  constructor(
    readonly retentionMs: RetentionMs,
    readonly listeners: QueuedListeners,
  ) {}

  /** A job by id, whatever its state. */
  find(id: string): StoredJob | undefined {
    return this.jobs.get(id);
  }

  /** A job leaves the store (removed, purged, or by retention): its id and its wait tokens go. */
  forget(jobId: string): void {
    this.jobs.delete(jobId);
    this.dropWaitTokens(jobId);
  }

  /**
   * A fresh lease token: unique among every claim of this store (a counter) and of any other
   * store (a random prefix), which is all a fence needs. A `randomUUID` per claim was about 0.6 KB
   * of garbage and 3% of a no-op job's CPU (bench/README.md, "MemoryStore").
   */
  leaseToken(): string {
    return this.#tokenPrefix + (++this.#claims).toString(36);
  }

  /** A job left the store: its wait tokens go with it. */
  private dropWaitTokens(jobId: string): void {
    const ids = this.waitTokensByJob.get(jobId);
    if (!ids) return;
    for (const id of ids) this.waitTokens.delete(id);
    this.waitTokensByJob.delete(jobId);
  }

  /** Frees the idempotency key of `record`, if it still holds it. */
  freeKey(record: JobRecord): void {
    const key = record.idempotencyKey;
    if (key !== undefined && this.keys.get(key) === record.id) this.keys.delete(key);
  }

  /** Tells the `subscribe` listeners that `record` became queued. */
  notify(record: JobRecord): void {
    this.listeners.notify(record.id, record.queue, record.runAt);
  }
}
