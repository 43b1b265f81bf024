/**
 * Batches (`loom.batches`, FLOWS.md): a group of jobs whose end enqueues callback jobs exactly once.
 *
 * The store keeps one record per batch with a counter per way a member can end (`completed`,
 * `dead`, `cancelled`). A member's terminal transition moves its counter in the same atomic
 * operation (on MongoDB, the same transaction), so finishing a member costs O(1) whatever the
 * batch's size, and the batch's end is decided exactly once: the transition that brings the last
 * member to an end marks the batch finished and enqueues its callbacks, each under the idempotency
 * key `batch:<id>:<on>` (a second attempt to enqueue it stores nothing).
 */
import type { BatchCallbackOn, JobStatus, NewJob } from './job-record.js';

/** The callbacks a batch enqueues at its end, as checked {@link NewJob}s (the store adds the idempotency key and `batchCallback`). */
export type BatchCallbackJobs = Partial<Record<BatchCallbackOn, NewJob>>;

/** Every {@link BatchCallbackOn}, in the order the callbacks are enqueued. */
export const BATCH_CALLBACKS: readonly BatchCallbackOn[] = ['complete', 'success', 'failure'];

/** What the engine hands {@link JobStore.createBatch}. */
export interface NewBatch {
  /** The members: checked jobs without idempotency or debounce keys (the engine refuses those). */
  jobs: NewJob[];
  callbacks: BatchCallbackJobs;
}

/** What a created batch is: its id and its members' ids, in input order. */
export interface CreatedBatch {
  id: string;
  jobIds: string[];
}

/** A batch's progress, as `loom.batches.get` returns it. */
export interface BatchRecord {
  id: string;
  /** How many members it has. */
  total: number;
  /** Members that completed. */
  completed: number;
  /** Members that died (dead-lettered). */
  dead: number;
  /** Members that were cancelled. */
  cancelled: number;
  /** Members not ended yet: `total - completed - dead - cancelled`. */
  pending: number;
  createdAt: Date;
  /**
   * When the last member ended and the callbacks were enqueued. From then on the counts are frozen:
   * a member retried or replayed afterwards runs again but does not change the batch.
   */
  finishedAt?: Date;
}

/** The idempotency key a batch's callback is enqueued under: one callback of each kind per batch. */
export function batchCallbackKey(batchId: string, on: BatchCallbackOn): string {
  return `batch:${batchId}:${on}`;
}

/** Which counter of a batch a member's terminal status moves (none for an active status). */
export function batchCounterOf(status: JobStatus): 'completed' | 'dead' | 'cancelled' | undefined {
  return status === 'completed' || status === 'dead' || status === 'cancelled' ? status : undefined;
}

/** The callbacks a batch that has just ended enqueues, given its final counts. */
export function callbacksToRun(counts: { dead: number; cancelled: number }): BatchCallbackOn[] {
  return ['complete', counts.dead + counts.cancelled === 0 ? 'success' : 'failure'];
}
