/**
 * The debounce-key rule of a MemoryStore. A job enqueued with a `debounceKey` holds that key for
 * as long as it is `queued` and has never started: a later enqueue with the same key updates that
 * job (payload, runAt, priority, attempts, flow keys) instead of adding one. The job loses the key
 * the first time it leaves `queued` (a claim starts it, or a cancel ends it), and never gets it
 * back: a retried, slept or replayed job does not take debounced enqueues.
 */
import { LoomError } from '../../support/errors.js';
import type { JobRecord, NewJob } from '../job-record.js';
import { clonePlain } from './clone.js';
import { copyDate } from './record-copy.js';
import type { StoredJob } from './stored-job.js';

/** Debounce key → the queued, never started job holding it. */
export class DebounceKeys {
  readonly #holders = new Map<string, StoredJob>();

  /** The job holding `key`, if any. */
  holder(key: string | undefined): StoredJob | undefined {
    return key === undefined ? undefined : this.#holders.get(key);
  }

  /** A job entered the store `queued`: it holds its key, if it has one. */
  entered(job: StoredJob): void {
    const key = job.record.debounceKey;
    if (key !== undefined) this.#holders.set(key, job);
  }

  /** A job left `queued` (started or cancelled): it no longer takes the debounced enqueues of its key. */
  left(record: JobRecord): void {
    const key = record.debounceKey;
    if (key === undefined) return;
    if (this.#holders.get(key)?.record === record) this.#holders.delete(key);
    record.debounceKey = undefined;
  }
}

/** Whether an enqueue of `jobs` may update queued jobs rather than add them. */
export function hasDebounced(jobs: NewJob[]): boolean {
  return jobs.some((job) => job.debounceKey !== undefined);
}

/**
 * What a debounced enqueue does to the queued job holding its key (the `debounce` transition): it
 * takes the new job's payload, `runAt`, priority, attempts and flow keys; its id, key and
 * `createdAt` stay.
 */
export function debouncedUpdate(job: NewJob): (record: JobRecord) => void {
  const payload = clonePlain(job.payload);
  return (record) => {
    record.payload = payload;
    record.runAt = copyDate(job.runAt);
    record.priority = job.priority;
    record.maxAttempts = job.maxAttempts;
    record.rateLimitKey = job.rateLimitKey;
    record.groupKey = job.groupKey;
  };
}

/** Why a debounced job cannot be enqueued in a transaction (nothing was enqueued). */
export function debounceInTransaction(): LoomError {
  return new LoomError(
    'INVALID_ARGUMENT',
    'MemoryStore: a debounced job (debounceKey) cannot be enqueued inside a transaction: it may update a queued job rather than add one; enqueue it after the transaction commits. Nothing was enqueued',
  );
}
