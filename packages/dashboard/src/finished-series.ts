import type { JobStore } from '@loom/core';

/** Jobs that finished per time bucket, oldest bucket first (the overview's chart). */
export interface FinishedSeries {
  /** Start of each bucket. */
  starts: Date[];
  bucketMs: number;
  /** Null when the store cannot count completions cheaply (a MongoStore keeping completed jobs forever). */
  completed: number[] | null;
  dead: number[];
}

/**
 * Completions and deaths per bucket over `[since, since + buckets * bucketMs)`, read straight from
 * the store: a read only the dashboard's chart makes, so core's operations have no method for it.
 * Undefined when the store cannot count finished jobs (`countFinished` is optional).
 */
export async function finishedSeries(store: JobStore, since: Date, bucketMs: number, buckets: number): Promise<FinishedSeries | undefined> {
  const countFinished = store.countFinished?.bind(store);
  if (countFinished === undefined) return undefined;
  const starts = Array.from({ length: buckets }, (_, i) => new Date(since.getTime() + i * bucketMs));
  const count = (status: 'completed' | 'dead') => Promise.all(starts.map((from) => countFinished({ status, from, to: new Date(from.getTime() + bucketMs) })));
  const [completed, dead] = await Promise.all([count('completed'), count('dead')]);
  return {
    starts,
    bucketMs,
    completed: completed.some((n) => n === null) ? null : (completed as number[]),
    dead: dead.map((n) => n ?? 0),
  };
}
