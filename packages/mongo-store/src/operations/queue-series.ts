import type { AnyBulkWriteOperation, Collection } from 'mongodb';
import { checkSeriesQuery, SERIES_RESOLUTIONS, SeriesBuckets, type QueueSeriesBucket, type QueueSeriesQuery, type SeriesCounts } from '@loom/core';
import { clientClosedWarning, isClientClosedError } from '../connection/client-closed.js';
import type { StoreLogger } from '../options.js';
import type { SeriesDocument } from '../schema/documents.js';
import type { IndexSpec } from '../schema/indexes.js';
import { StoreArgumentError } from '../store-errors.js';
import { COUNT_FLUSH_AT, COUNT_FLUSH_MS } from './completed-counts.js';

/** The series collection's read index: one queue's buckets of one resolution, by start. */
export const SERIES_READ_INDEX = 'loom_series_read';
/** The series collection's expiry index: what each flush deletes past its retention. */
export const SERIES_EXPIRY_INDEX = 'loom_series_expiry';

/** The indexes of the series collection. */
export function seriesIndexPlan(): IndexSpec[] {
  return [
    { name: SERIES_READ_INDEX, key: { q: 1, r: 1, s: 1 } },
    { name: SERIES_EXPIRY_INDEX, key: { x: 1 } },
  ];
}

/**
 * The per-queue series of `queueSeries` (the dashboard's 24-hour and 7-day charts), kept as the
 * completed counts are (`completed-counts.ts`): claims, completions, retries and dead-letterings
 * this store makes, and the depths `listQueues(now)` sees, are added up in memory per queue,
 * resolution and bucket, and written once a minute ({@link COUNT_FLUSH_MS}, or at
 * {@link COUNT_FLUSH_AT} events) as one unordered bulk of `$inc` / `$max` upserts, one document per
 * bucket touched: no command per job. Each write also deletes the buckets past their retention
 * (`SERIES_RESOLUTIONS`, judged by the engines' clock, the latest `now` it was given). A read writes
 * this store's pending increments first; another process's last minute is not seen until it
 * writes, and a process that dies loses them.
 */
export class MongoQueueSeries {
  #pending = new SeriesBuckets();
  #unwritten = 0;
  #latest = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #flushing: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(
    private readonly series: Collection<SeriesDocument>,
    private readonly logger: StoreLogger,
  ) {}

  /** Adds counts to `queue`'s buckets of `at`. */
  add(queue: string, at: Date, counts: Partial<SeriesCounts>): void {
    this.#pending.add(queue, at, counts);
    this.#noted(at);
  }

  /** A depth sample (the queued count `listQueues(now)` found). */
  sampleDepth(queue: string, at: Date, depth: number): void {
    this.#pending.sampleDepth(queue, at, depth);
    this.#noted(at);
  }

  #noted(at: Date): void {
    this.#latest = Math.max(this.#latest, at.getTime());
    this.#unwritten += 1;
    if (this.#closed) return;
    if (this.#unwritten >= COUNT_FLUSH_AT) void this.flush().catch((err: unknown) => this.#failed(err));
    else this.#schedule();
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setTimeout(() => void this.flush().catch((err: unknown) => this.#failed(err)), COUNT_FLUSH_MS);
    this.#timer.unref?.();
  }

  /** A background write failed: retried later, unless the client was closed (then writing stops, once). */
  #failed(err: unknown): void {
    if (!isClientClosedError(err)) return this.logger.warn({ err }, 'writing queue series failed; retrying');
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#pending.drain();
    this.logger.warn({ err }, clientClosedWarning('queue series'));
  }

  /** Writes what is pending; resolves once it is stored. What fails stays pending. */
  flush(): Promise<void> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#flushing = this.#flushing.catch(() => {}).then(() => this.#write());
    return this.#flushing;
  }

  /** Writes one last time and stops writing in the background. */
  close(): Promise<void> {
    this.#closed = true;
    return this.flush();
  }

  async #write(): Promise<void> {
    const entries = this.#pending.drain();
    this.#unwritten = 0;
    if (entries.length === 0) return;
    const operations: AnyBulkWriteOperation<SeriesDocument>[] = entries.map((e) => {
      const { bucketMs, keepMs } = SERIES_RESOLUTIONS[e.resolution];
      return {
        updateOne: {
          filter: { _id: { q: e.queue, r: e.resolution, s: e.start } },
          update: {
            $inc: { c: e.completed, f: e.failed, d: e.dead, st: e.started, w: e.waitMs },
            $set: { q: e.queue, r: e.resolution, s: e.start, x: new Date(e.start + bucketMs + keepMs) },
            ...(e.depth === null ? {} : { $max: { dp: e.depth } }),
          },
          upsert: true,
        },
      };
    });
    operations.push({ deleteMany: { filter: { x: { $lte: new Date(this.#latest) } } } });
    try {
      await this.series.bulkWrite(operations, { ordered: false });
    } catch (err) {
      // Put everything back (an `$inc` written twice would count twice, so only a failure of the
      // whole write is retried: a partial failure loses the buckets the server refused).
      if (!(err instanceof Error && 'writeErrors' in err)) for (const e of entries) this.#pending.restore(e);
      this.#schedule();
      throw err;
    }
  }

  /** `queueSeries`: this store's pending increments written, then one index range read. */
  async read(req: QueueSeriesQuery): Promise<QueueSeriesBucket[]> {
    try {
      checkSeriesQuery(req);
    } catch (err) {
      throw new StoreArgumentError((err as Error).message);
    }
    await this.flush();
    const docs = await this.series
      .find({ q: req.queue, r: req.resolution, s: { $gte: req.from.getTime(), $lt: req.to.getTime() } }, { hint: SERIES_READ_INDEX })
      .sort({ s: 1 })
      .toArray();
    return docs.map((d) => ({
      start: new Date(d.s),
      completed: d.c ?? 0,
      failed: d.f ?? 0,
      dead: d.d ?? 0,
      started: d.st ?? 0,
      waitMs: d.w ?? 0,
      depth: d.dp ?? null,
    }));
  }
}
