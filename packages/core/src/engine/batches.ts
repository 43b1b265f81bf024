import type { Clock } from '../support/clock.js';
import { InvalidBatchError, LoomError } from '../support/errors.js';
import type { JobClass, PayloadOf } from '../jobs/job-class.js';
import type { EnqueueOptions } from '../store/enqueue-options.js';
import type { JobStore } from '../store/store.js';
import type { NewJob } from '../store/job-record.js';
import type { BatchCallbackJobs, BatchRecord, CreatedBatch } from '../store/batch.js';
import type { Enqueuer } from './enqueuer.js';

/** One job of a batch, or one of its callbacks: a job class, its payload and when it may run. */
export interface BatchJob<C extends JobClass = JobClass> {
  job: C;
  payload?: PayloadOf<C>;
  /** `delay`, `runAt` and `priority` as for `loom.enqueue` (a member has no idempotency key). */
  options?: Pick<EnqueueOptions, 'delay' | 'runAt' | 'priority'>;
}

/** What `loom.batches.create` takes. */
export interface CreateBatchOptions<C extends JobClass = JobClass> {
  /** The members (none is fine: the batch then ends at once). */
  jobs: readonly BatchJob<C>[];
  /** Runs once when every member has ended, however it ended. */
  onComplete?: BatchJob;
  /** Runs once when every member has ended and all completed. */
  onSuccess?: BatchJob;
  /** Runs once when every member has ended and some died or were cancelled. */
  onFailure?: BatchJob;
}

const CALLBACK_OPTIONS = { onComplete: 'complete', onSuccess: 'success', onFailure: 'failure' } as const;

/**
 * `loom.batches`: groups of jobs with callbacks that run exactly once when every job of the group
 * has ended, and their progress.
 *
 * ```ts
 * const batch = await loom.batches.create({
 *   jobs: orders.map((o) => ({ job: SendInvoice, payload: { orderId: o.id } })),
 *   onComplete: { job: InvoicesDone, payload: { month } },
 * });
 * await loom.batches.get(batch.id); // { id, total, completed, dead, cancelled, pending, finishedAt? }
 * ```
 *
 * Each finished member costs the store one counter update in the same atomic write as the
 * member's own transition (no scan of the batch); the callback's `ctx.batch` has the counts and
 * the ids of the members that died or were cancelled.
 */
export class Batches {
  constructor(private readonly deps: { store: JobStore; clock: Clock; enqueuer: Enqueuer }) {}

  /**
   * Checks every member and callback (payload schemas, registered classes), then stores the batch
   * and its members together: all or nothing. A refused member or callback throws
   * (`INVALID_PAYLOAD`, `JOB_NOT_REGISTERED`, `INVALID_BATCH`) and stores nothing. Members must
   * not be debounced jobs or have an idempotency key (`INVALID_BATCH`). Returns the batch id and
   * the members' ids in input order.
   */
  async create<C extends JobClass>(spec: CreateBatchOptions<C>): Promise<CreatedBatch> {
    if (typeof spec !== 'object' || spec === null) throw new InvalidBatchError('pass { jobs, onComplete?, onSuccess?, onFailure? }');
    const entries: readonly BatchJob<C>[] = spec.jobs;
    // Checked as unknown: Array.isArray would narrow the typed entries to any[].
    if (!Array.isArray(entries as unknown)) throw new InvalidBatchError('`jobs` must be an array of { job, payload }');
    const now = this.deps.clock.now();
    const jobs: NewJob[] = [];
    for (const [i, entry] of entries.entries()) jobs.push(this.prepare(entry, now, `jobs[${i}]`));
    for (const [i, job] of jobs.entries()) {
      if (job.idempotencyKey !== undefined || job.debounceKey !== undefined) {
        throw new InvalidBatchError(`jobs[${i}] (job "${job.name}") has an idempotency key or is debounced; a batch member must be a job of its own`);
      }
    }
    const callbacks: BatchCallbackJobs = {};
    for (const [option, on] of Object.entries(CALLBACK_OPTIONS) as [
      keyof typeof CALLBACK_OPTIONS,
      (typeof CALLBACK_OPTIONS)[keyof typeof CALLBACK_OPTIONS],
    ][]) {
      const entry = spec[option];
      if (entry === undefined) continue;
      const job = this.prepare(entry, now, option);
      // The store gives each callback its own key (batch:<id>:<on>).
      delete job.idempotencyKey;
      delete job.debounceKey;
      callbacks[on] = job;
    }
    const created = await this.deps.store.createBatch({ jobs, callbacks }, { now });
    this.deps.enqueuer.announce(created.jobIds.map((id, i) => ({ id, queue: jobs[i]!.queue, runAt: jobs[i]!.runAt })));
    return created;
  }

  /** A batch's progress: its counts and, once every member has ended, `finishedAt`. Null when no batch has this id. */
  get(id: string): Promise<BatchRecord | null> {
    if (typeof id !== 'string') throw new LoomError('INVALID_ARGUMENT', 'loom.batches.get: the id must be a string');
    return this.deps.store.getBatch(id);
  }

  private prepare(entry: BatchJob, now: Date, path: string): NewJob {
    if (typeof entry !== 'object' || entry === null || typeof entry.job !== 'function') {
      throw new InvalidBatchError(`${path} must be { job: <a @Job class>, payload?, options? }`);
    }
    const options = entry.options ?? {};
    if (typeof options !== 'object' || options === null) throw new InvalidBatchError(`${path}.options must be an object`);
    const { delay, runAt, priority } = options;
    const picked: EnqueueOptions = {};
    if (delay !== undefined) picked.delay = delay;
    if (runAt !== undefined) picked.runAt = runAt;
    if (priority !== undefined) picked.priority = priority;
    return this.deps.enqueuer.prepareJob(entry.job, entry.payload, picked, now, path);
  }
}
