import { SERIES_RESOLUTIONS, type JobStore, type QueueSeriesBucket, type SeriesResolution } from '@loom/core';

/** The ranges a queue page charts: 24 hours of 5-minute buckets, 7 days of hourly ones. */
export const CHART_RANGES = {
  '24h': { resolution: '5m', buckets: 288, label: '24 hours' },
  '7d': { resolution: '1h', buckets: 168, label: '7 days' },
} as const satisfies Record<string, { resolution: SeriesResolution; buckets: number; label: string }>;

/** A range of {@link CHART_RANGES}. */
export type ChartRange = keyof typeof CHART_RANGES;

/** One queue's series over a range, every bucket present (empty ones zero; depth null where unsampled). */
export interface QueueCharts {
  range: ChartRange;
  bucketMs: number;
  buckets: QueueSeriesBucket[];
}

/**
 * The store's buckets of `queue` over the range ending with the bucket `now` is in, gaps filled.
 * Undefined when the store keeps no series (`queueSeries` is optional).
 */
export async function queueCharts(store: JobStore, queue: string, range: ChartRange, now: Date): Promise<QueueCharts | undefined> {
  if (store.queueSeries === undefined) return undefined;
  const { resolution, buckets: n } = CHART_RANGES[range];
  const { bucketMs } = SERIES_RESOLUTIONS[resolution];
  const first = Math.floor(now.getTime() / bucketMs) * bucketMs - (n - 1) * bucketMs;
  const stored = await store.queueSeries({ queue, resolution, from: new Date(first), to: new Date(first + n * bucketMs) });
  const byStart = new Map(stored.map((b) => [b.start.getTime(), b]));
  const buckets = Array.from({ length: n }, (_, i) => {
    const start = first + i * bucketMs;
    return byStart.get(start) ?? { start: new Date(start), completed: 0, failed: 0, dead: 0, started: 0, waitMs: 0, depth: null };
  });
  return { range, bucketMs, buckets };
}
