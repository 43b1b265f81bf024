import { MongoBulkWriteError, type AnyBulkWriteOperation, type Collection } from 'mongodb';
import { clientClosedWarning, isClientClosedError } from '../connection/client-closed.js';
import type { StoreLogger } from '../options.js';
import type { CompletedCountDocument } from '../schema/documents.js';
import type { IndexSpec } from '../schema/indexes.js';

/** How many buckets a retention period is cut into: the count may run ahead of retention by one. */
const BUCKETS_PER_RETENTION = 100;

/** How long completions wait in memory before their counts are written, in ms (one write for all of them). */
export const COUNT_FLUSH_MS = 60_000;

/** This many completions pending are written at once, without waiting for {@link COUNT_FLUSH_MS}. */
export const COUNT_FLUSH_AT = 10_000;

/** The TTL index of the counts collection: a bucket goes one retention period after its end. */
export const COUNTS_RETENTION_INDEX = 'loom_counts_retention';

/** The index of the counts collection: the TTL index on bucket ends, when retention of completed jobs is on. */
export function countsIndexPlan(retentionSeconds: number | false): IndexSpec[] {
  return retentionSeconds === false ? [] : [{ name: COUNTS_RETENTION_INDEX, key: { e: 1 }, expireAfterSeconds: retentionSeconds }];
}

/**
 * The number of completed jobs per queue, kept as counters so that `stats` and `listQueues` read a
 * handful of small documents instead of counting a queue's completed jobs, which grow with
 * history (a million under a week's retention at 2 jobs/s).
 *
 * Every completion the store makes is added here (with its queue and finish time) and written
 * with one unordered bulk `$inc` a minute ({@link COUNT_FLUSH_MS}), or sooner once
 * {@link COUNT_FLUSH_AT} are pending, so counting costs no command per job; `stats` and
 * `listQueues` write what this store has pending first, and so does `close`. A removed completed job (`removeJob`)
 * takes one off. Retention: counts sit in buckets of a hundredth of the retention period (by finish
 * time); the TTL index removes a bucket one retention period after its end, so a count includes
 * jobs that retention already removed for at most one bucket's width.
 *
 * The figure is approximate, by design: counts still pending in another process are not seen
 * until it writes them (at most a minute later); a process that dies loses its pending
 * counts; a completion in a transaction that then aborts was counted; a completed job kept past its
 * retention (a retention hold) stops being counted when its bucket expires; completed jobs stored
 * before the counters existed are not counted. Queued, running, waiting and cancelled jobs are
 * counted exactly, from the jobs themselves (see `queues.ts`).
 */
export class CompletedCounts {
  /** Pending increments: queue → bucket start → n. */
  #pending = new Map<string, Map<number, number>>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #flushing: Promise<void> = Promise.resolve();
  /** Completions (and removals) added since the last write began. */
  #unwritten = 0;
  /** Set by {@link close}: nothing is written in the background any more (the client may be closed). */
  #closed = false;
  readonly #widthMs: number;

  constructor(
    private readonly counts: Collection<CompletedCountDocument>,
    private readonly retentionSeconds: number | false,
    private readonly logger: StoreLogger,
  ) {
    this.#widthMs = retentionSeconds === false ? 0 : Math.max(1_000, Math.ceil((retentionSeconds * 1_000) / BUCKETS_PER_RETENTION));
  }

  /** Counts `delta` jobs of `queue` completed (or, negative, removed) with finish time `finishedAt`. */
  add(queue: string, finishedAt: Date, delta: number): void {
    const bucket = this.#widthMs === 0 ? 0 : Math.floor(finishedAt.getTime() / this.#widthMs) * this.#widthMs;
    this.addToBucket(queue, bucket, delta);
    this.#unwritten += Math.abs(delta);
    if (this.#unwritten >= COUNT_FLUSH_AT && !this.#closed) this.flushInBackground();
    else this.schedule();
  }

  /** Writes the pending counts {@link COUNT_FLUSH_MS} from now, unless a write is already due. */
  private schedule(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setTimeout(() => this.flushInBackground(), COUNT_FLUSH_MS);
    this.#timer.unref?.();
  }

  /**
   * {@link flush} with nobody waiting: a failure is logged, and its counts stay pending for the next
   * write; unless the client was closed, which no later write gets past: then writing stops (once).
   */
  private flushInBackground(): void {
    void this.flush().catch((err: unknown) => {
      if (!isClientClosedError(err)) return this.logger.warn({ err }, 'writing completed-job counts failed; retrying');
      if (this.#closed) return;
      this.#closed = true;
      if (this.#timer !== undefined) clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#pending = new Map();
      this.logger.warn({ err }, clientClosedWarning('completed-job counts'));
    });
  }

  /** Writes the pending counts (one bulk write); resolves once they are stored. Failed counts stay pending. */
  flush(): Promise<void> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#flushing = this.#flushing.catch(() => {}).then(() => this.write());
    return this.#flushing;
  }

  /**
   * Writes what is pending one last time and stops writing in the background: a failed write is
   * not retried later, when the store's client may be closed (its counts are lost, as a dead
   * process's are).
   */
  close(): Promise<void> {
    this.#closed = true;
    return this.flush();
  }

  /** Completed jobs per queue, as stored (after writing this store's own pending counts). */
  async perQueue(): Promise<Map<string, number>> {
    await this.flush();
    const groups = await this.counts.aggregate<{ _id: string; n: number }>([{ $group: { _id: '$q', n: { $sum: '$n' } } }]).toArray();
    return new Map(groups.filter((g) => g.n > 0).map((g) => [g._id, g.n]));
  }

  private async write(): Promise<void> {
    const pending = this.#pending;
    if (pending.size === 0) return;
    this.#pending = new Map();
    this.#unwritten = 0;
    const counted: { q: string; b: number; n: number }[] = [];
    for (const [q, byBucket] of pending) for (const [b, n] of byBucket) if (n !== 0) counted.push({ q, b, n });
    if (counted.length === 0) return;
    const operations: AnyBulkWriteOperation<CompletedCountDocument>[] = counted.map(({ q, b, n }) => ({
      updateOne: {
        filter: { _id: { q, b } },
        update: this.#widthMs === 0 ? { $inc: { n }, $set: { q } } : { $inc: { n }, $set: { q, e: new Date(b + this.#widthMs) } },
        upsert: true,
      },
    }));
    try {
      await this.counts.bulkWrite(operations, { ordered: false });
    } catch (err) {
      // What was not written goes back into the pending counts, for the next write (a statement
      // the server refused alone, e.g. two processes creating one bucket at once; or all of them).
      const failed = err instanceof MongoBulkWriteError ? new Set([err.writeErrors].flat().map((e) => e.index)) : undefined;
      counted.forEach(({ q, b, n }, i) => {
        if (failed === undefined || failed.has(i)) this.addToBucket(q, b, n);
      });
      this.schedule();
      throw err;
    }
  }

  private addToBucket(queue: string, bucket: number, n: number): void {
    let byBucket = this.#pending.get(queue);
    if (!byBucket) this.#pending.set(queue, (byBucket = new Map<number, number>()));
    byBucket.set(bucket, (byBucket.get(bucket) ?? 0) + n);
  }
}
