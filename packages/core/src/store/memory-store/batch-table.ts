/**
 * The batches of a MemoryStore (see `../batch.ts`): one entry per batch with its counts, the ids
 * of its failed members (so `batchFailures` reads no job) and the callbacks it enqueues at its
 * end. `transition.ts` tells it of every member that ends or is queued again, in the same
 * synchronous step as the job's own transition, so the counts never disagree with the jobs.
 */
import { batchCallbackKey, batchCounterOf, callbacksToRun, type BatchRecord, type NewBatch } from '../batch.js';
import type { JobRecord, JobStatus } from '../job-record.js';
import { newRecord } from './new-record.js';
import { copyDate } from './record-copy.js';

/** A batch as the MemoryStore holds it. */
export interface StoredBatch {
  record: BatchRecord;
  /** Members now dead or cancelled, in the order they ended. */
  failed: Set<string>;
  callbacks: NewBatch['callbacks'];
}

export class BatchTable {
  readonly #batches = new Map<string, StoredBatch>();

  get(id: string): StoredBatch | undefined {
    return this.#batches.get(id);
  }

  add(batch: StoredBatch): void {
    this.#batches.set(batch.record.id, batch);
  }

  /**
   * A member of a batch moved from `from` to `to`. Until the batch has finished: an end adds to
   * its counter, a dead or cancelled member queued again takes from it; the end of the last
   * pending member finishes the batch. Returns the callback records to insert (none mostly).
   */
  memberMoved(record: JobRecord, from: JobStatus, to: JobStatus, now: Date, keys: ReadonlyMap<string, string>): JobRecord[] {
    const batch = this.#batches.get(record.batchId!);
    if (!batch || batch.record.finishedAt !== undefined) return [];
    const left = batchCounterOf(from);
    const entered = batchCounterOf(to);
    if (left === entered) return [];
    const counts = batch.record;
    if (left !== undefined) {
      counts[left] -= 1;
      counts.pending += 1;
      batch.failed.delete(record.id);
    }
    if (entered !== undefined) {
      counts[entered] += 1;
      counts.pending -= 1;
      if (entered !== 'completed') batch.failed.add(record.id);
    }
    return counts.pending === 0 ? this.finish(batch, now, keys) : [];
  }

  /** Marks the batch finished; returns its callbacks' records, each under its idempotency key (unless taken). */
  finish(batch: StoredBatch, now: Date, keys: ReadonlyMap<string, string>): JobRecord[] {
    batch.record.finishedAt = copyDate(now);
    const records: JobRecord[] = [];
    for (const on of callbacksToRun(batch.record)) {
      const job = batch.callbacks[on];
      const key = batchCallbackKey(batch.record.id, on);
      if (job === undefined || keys.has(key)) continue;
      const record = newRecord({ ...job, idempotencyKey: key }, now);
      record.batchCallback = { batchId: batch.record.id, on };
      records.push(record);
    }
    return records;
  }
}
