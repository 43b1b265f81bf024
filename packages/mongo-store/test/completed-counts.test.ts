import { describe, expect, it, jest } from '@jest/globals';
import { MongoClient, type Collection } from 'mongodb';
import { CompletedCounts, COUNT_FLUSH_MS } from '../src/operations/completed-counts.js';
import { MongoQueueSeries } from '../src/operations/queue-series.js';
import type { CompletedCountDocument, SeriesDocument } from '../src/schema/documents.js';

// The completed-job counters write in the background; once the store is closed (its client may be
// closed too), a failed write must not be retried later, where it would fail again and log into
// whatever runs next in the process.
describe('completed-job counts', () => {
  function failingCounts(): { counts: CompletedCounts; writes: () => number; warnings: unknown[] } {
    let writes = 0;
    const collection = {
      bulkWrite: () => {
        writes++;
        return Promise.reject(new Error('client closed'));
      },
    } as unknown as Collection<CompletedCountDocument>;
    const warnings: unknown[] = [];
    const logger = { warn: (obj: unknown) => warnings.push(obj), info: () => {}, error: () => {}, debug: () => {} };
    return { counts: new CompletedCounts(collection, false, logger as never), writes: () => writes, warnings };
  }

  it('retries a failed background write while open', async () => {
    jest.useFakeTimers();
    try {
      const { counts, writes } = failingCounts();
      counts.add('q', new Date(0), 1);
      await jest.advanceTimersByTimeAsync(COUNT_FLUSH_MS);
      expect(writes()).toBe(1);
      await jest.advanceTimersByTimeAsync(COUNT_FLUSH_MS);
      expect(writes()).toBe(2);
      await counts.close().catch(() => {});
    } finally {
      jest.useRealTimers();
    }
  });

  it('writes once at close and never again, even when that write fails', async () => {
    jest.useFakeTimers();
    try {
      const { counts, writes, warnings } = failingCounts();
      counts.add('q', new Date(0), 1);
      await expect(counts.close()).rejects.toThrow('client closed');
      counts.add('q', new Date(0), 1);
      await jest.advanceTimersByTimeAsync(10 * COUNT_FLUSH_MS);
      expect(writes()).toBe(1);
      expect(warnings).toEqual([]);
    } finally {
      jest.useRealTimers();
    }
  });
});

// An application that closes its MongoClient before the store (or before `loom.stop()`): the
// driver refuses every operation from then on, so the background writers stop at their first
// failure, with one warning that says what to do, instead of failing and warning every minute.
describe('background writers after the client was closed before the store', () => {
  async function closedClient(): Promise<MongoClient> {
    const client = new MongoClient('mongodb://127.0.0.1:1', { serverSelectionTimeoutMS: 100 });
    await client.close();
    return client;
  }
  function capture(): { logger: never; warnings: string[] } {
    const warnings: string[] = [];
    const logger = { warn: (_obj: unknown, msg?: string) => warnings.push(msg ?? ''), info: () => {}, error: () => {}, debug: () => {} };
    return { logger: logger as never, warnings };
  }
  const advice = /MongoClient was closed before the store.*close the store \(store\.close\(\), after loom\.stop\(\).*\) before closing the client/;

  /** Each background writer: its collection, and one event that makes it write a minute later. */
  const writers: [string, string, (collection: Collection, logger: never) => () => void][] = [
    [
      'completed-job counts',
      'loom_completed_counts',
      (c, logger) => {
        const writer = new CompletedCounts(c as unknown as Collection<CompletedCountDocument>, false, logger);
        return () => writer.add('q', new Date(0), 1);
      },
    ],
    [
      'queue series',
      'loom_queue_series',
      (c, logger) => {
        const writer = new MongoQueueSeries(c as unknown as Collection<SeriesDocument>, logger);
        return () => writer.add('q', new Date(0), { completed: 1 });
      },
    ],
  ];

  it.each(writers)('%s: one warning naming the fix, then no more writes', async (what, name, writerOf) => {
    const client = await closedClient();
    const collection = client.db('app').collection(name);
    const bulkWrite = jest.spyOn(collection, 'bulkWrite');
    const { logger, warnings } = capture();
    jest.useFakeTimers();
    try {
      const event = writerOf(collection, logger);
      event();
      await jest.advanceTimersByTimeAsync(COUNT_FLUSH_MS);
      event();
      await jest.advanceTimersByTimeAsync(10 * COUNT_FLUSH_MS);
      expect(bulkWrite).toHaveBeenCalledTimes(1);
      expect(warnings).toEqual([expect.stringMatching(advice)]);
      expect(warnings[0]).toMatch(new RegExp(`^writing ${what} failed`));
    } finally {
      jest.useRealTimers();
    }
  });

  it('a write that fails otherwise is still retried', async () => {
    const series = { bulkWrite: jest.fn(() => Promise.reject(new Error('connection reset'))) } as unknown as Collection<SeriesDocument>;
    const { logger, warnings } = capture();
    jest.useFakeTimers();
    try {
      const writer = new MongoQueueSeries(series, logger);
      writer.add('q', new Date(0), { completed: 1 });
      await jest.advanceTimersByTimeAsync(3 * COUNT_FLUSH_MS);
      expect(warnings).toEqual(['writing queue series failed; retrying', 'writing queue series failed; retrying', 'writing queue series failed; retrying']);
    } finally {
      jest.useRealTimers();
    }
  });
});
