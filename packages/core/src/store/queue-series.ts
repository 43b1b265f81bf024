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

/** Every resolution, in one array made once (each count goes to both). */
const RESOLUTIONS = Object.keys(SERIES_RESOLUTIONS) as SeriesResolution[];

/** When a bucket is past its resolution's retention (ms). */
const expiryOf = (e: SeriesEntry): number => e.start + SERIES_RESOLUTIONS[e.resolution].bucketMs + SERIES_RESOLUTIONS[e.resolution].keepMs;

/**
 * Buckets in memory, keyed by queue, resolution and start: MemoryStore keeps its series in one;
 * MongoStore gathers increments in one and writes them with one bulk write a minute.
 */
export class SeriesBuckets {
  readonly #entries = new Map<string, SeriesEntry>();
  /**
   * Each queue's bucket of each resolution last counted in: nearly every count lands in it, so the
   * map key is built once per bucket rather than twice per claim and per completion. Holds only
   * buckets still in {@link #entries}.
   */
  readonly #current = new Map<string, Partial<Record<SeriesResolution, SeriesEntry>>>();
  /** The earliest instant a bucket held passes its retention (ms): {@link prune} has nothing to do before. */
  #nextExpiry = Infinity;

  /** How many buckets are held. */
  get size(): number {
    return this.#entries.size;
  }

  #entry(queue: string, resolution: SeriesResolution, start: number): SeriesEntry {
    let current = this.#current.get(queue);
    const recent = current?.[resolution];
    if (recent !== undefined && recent.start === start) return recent;
    const key = `${resolution}\u0000${start}\u0000${queue}`;
    let entry = this.#entries.get(key);
    if (!entry) {
      entry = { queue, resolution, start, completed: 0, failed: 0, dead: 0, started: 0, waitMs: 0, depth: null };
      this.#entries.set(key, entry);
      this.#nextExpiry = Math.min(this.#nextExpiry, expiryOf(entry));
    }
    if (!current) this.#current.set(queue, (current = {}));
    current[resolution] = entry;
    return entry;
  }

  /** Adds counts to `queue`'s buckets of `at`, in both resolutions. */
  add(queue: string, at: Date, counts: Partial<SeriesCounts>): void {
    for (const resolution of RESOLUTIONS) {
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
    for (const resolution of RESOLUTIONS) {
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
    this.#current.clear();
    this.#nextExpiry = Infinity;
    return all;
  }

  /** Drops buckets past their resolution's retention at `now`. */
  prune(now: Date): void {
    const ms = now.getTime();
    if (ms < this.#nextExpiry) return;
    let next = Infinity;
    for (const [key, e] of this.#entries) {
      const expiry = expiryOf(e);
      if (expiry <= ms) this.#entries.delete(key);
      else next = Math.min(next, expiry);
    }
    this.#current.clear();
    this.#nextExpiry = next;
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
