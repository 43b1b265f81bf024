/**
 * Per-queue time series (issue 34): what the dashboard's 24-hour and 7-day charts draw. Stores keep
 * them as counters in time buckets, added to by the writes runs make anyway (a claim, a completion,
 * a retry, a dead-lettering) and by `listQueues` (the queue depth it saw), so drawing a chart never
 * reads a job. See {@link JobStore.queueSeries}.
 */
import { LoomError } from '../support/errors.js';

/**
 * The two resolutions a store keeps: 5-minute buckets for 25 hours (the 24-hour chart) and hourly
 * buckets for 8 days (the 7-day chart). Older buckets are deleted (MongoStore: a TTL index).
 */
export const SERIES_RESOLUTIONS = {
  '5m': { bucketMs: 5 * 60_000, keepMs: 25 * 3_600_000 },
  '1h': { bucketMs: 3_600_000, keepMs: 8 * 86_400_000 },
} as const;

/** A resolution of {@link SERIES_RESOLUTIONS}. */
export type SeriesResolution = keyof typeof SERIES_RESOLUTIONS;

/** What {@link JobStore.queueSeries} reads: one queue's buckets starting in `[from, to)`. */
export interface QueueSeriesQuery {
  queue: string;
  resolution: SeriesResolution;
  from: Date;
  to: Date;
}

/** The counters of one bucket. */
export interface SeriesCounts {
  /** Runs that completed. */
  completed: number;
  /** Attempts that failed (a retry or a dead-lettering). */
  failed: number;
  /** Jobs that died (dead-lettered). */
  dead: number;
  /** Runs that started (claims). */
  started: number;
  /** The sum over those starts of how long each job had waited since it was due (`now - runAt` at the claim). */
  waitMs: number;
}

/** One bucket of one queue: `start` is a multiple of the resolution's width. */
export interface QueueSeriesBucket extends SeriesCounts {
  start: Date;
  /** The most queued jobs a `listQueues` saw in this bucket; null when none ran in it (depth is sampled). */
  depth: number | null;
}

function isDate(value: unknown): value is Date {
  return value instanceof Date && !Number.isNaN(value.getTime());
}

/** Checks a {@link QueueSeriesQuery}; stores refuse a bad one with `INVALID_ARGUMENT`. */
export function checkSeriesQuery(req: QueueSeriesQuery): void {
  const fail = (what: string) => {
    throw new LoomError('INVALID_ARGUMENT', `queueSeries ${what}; nothing was read`);
  };
  if (typeof req !== 'object' || req === null) fail('needs { queue, resolution, from, to }');
  if (typeof req.queue !== 'string' || req.queue === '') fail('queue must be a non-empty string');
  if (!Object.prototype.hasOwnProperty.call(SERIES_RESOLUTIONS, req.resolution)) fail(`resolution must be '5m' or '1h', got ${JSON.stringify(req.resolution)}`);
  if (!isDate(req.from) || !isDate(req.to)) fail('from and to must be valid Dates');
}

/** The start of the bucket of `at` in a resolution. */
export function bucketStart(resolution: SeriesResolution, at: Date): number {
  const { bucketMs } = SERIES_RESOLUTIONS[resolution];
  return Math.floor(at.getTime() / bucketMs) * bucketMs;
}

/** One queue's bucket, as kept in memory (MemoryStore's series, MongoStore's pending increments). */
export interface SeriesEntry extends SeriesCounts {
  queue: string;
  resolution: SeriesResolution;
  start: number;
  depth: number | null;
}

/**
 * Buckets in memory, keyed by queue, resolution and start: MemoryStore keeps its series in one;
 * MongoStore gathers increments in one and writes them with one bulk write a minute.
 */
export class SeriesBuckets {
  readonly #entries = new Map<string, SeriesEntry>();

  /** How many buckets are held. */
  get size(): number {
    return this.#entries.size;
  }

  #entry(queue: string, resolution: SeriesResolution, start: number): SeriesEntry {
    const key = `${resolution}\u0000${start}\u0000${queue}`;
    let entry = this.#entries.get(key);
    if (!entry) {
      entry = { queue, resolution, start, completed: 0, failed: 0, dead: 0, started: 0, waitMs: 0, depth: null };
      this.#entries.set(key, entry);
    }
    return entry;
  }

  /** Adds counts to `queue`'s buckets of `at`, in both resolutions. */
  add(queue: string, at: Date, counts: Partial<SeriesCounts>): void {
    for (const resolution of Object.keys(SERIES_RESOLUTIONS) as SeriesResolution[]) {
      const entry = this.#entry(queue, resolution, bucketStart(resolution, at));
      entry.completed += counts.completed ?? 0;
      entry.failed += counts.failed ?? 0;
      entry.dead += counts.dead ?? 0;
      entry.started += counts.started ?? 0;
      entry.waitMs += counts.waitMs ?? 0;
    }
  }

  /** Records a depth sample: each bucket of `at` keeps the largest. */
  sampleDepth(queue: string, at: Date, depth: number): void {
    for (const resolution of Object.keys(SERIES_RESOLUTIONS) as SeriesResolution[]) {
      const entry = this.#entry(queue, resolution, bucketStart(resolution, at));
      entry.depth = entry.depth === null ? depth : Math.max(entry.depth, depth);
    }
  }

  /** Puts back a bucket {@link drain} took out (a write that failed), adding to what came since. */
  restore(e: SeriesEntry): void {
    const entry = this.#entry(e.queue, e.resolution, e.start);
    entry.completed += e.completed;
    entry.failed += e.failed;
    entry.dead += e.dead;
    entry.started += e.started;
    entry.waitMs += e.waitMs;
    if (e.depth !== null) entry.depth = entry.depth === null ? e.depth : Math.max(entry.depth, e.depth);
  }

  /** Takes every bucket out (MongoStore writes them). */
  drain(): SeriesEntry[] {
    const all = [...this.#entries.values()];
    this.#entries.clear();
    return all;
  }

  /** Drops buckets past their resolution's retention at `now`. */
  prune(now: Date): void {
    for (const [key, e] of this.#entries) {
      const { bucketMs, keepMs } = SERIES_RESOLUTIONS[e.resolution];
      if (e.start + bucketMs + keepMs <= now.getTime()) this.#entries.delete(key);
    }
  }

  /** The buckets a query asks for, oldest first. */
  read(req: QueueSeriesQuery): QueueSeriesBucket[] {
    const from = req.from.getTime();
    const to = req.to.getTime();
    return [...this.#entries.values()]
      .filter((e) => e.queue === req.queue && e.resolution === req.resolution && e.start >= from && e.start < to)
      .sort((a, b) => a.start - b.start)
      .map(({ start, completed, failed, dead, started, waitMs, depth }) => ({ start: new Date(start), completed, failed, dead, started, waitMs, depth }));
  }
}
