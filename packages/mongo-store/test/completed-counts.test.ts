import { describe, expect, it, jest } from '@jest/globals';
import type { Collection } from 'mongodb';
import { CompletedCounts, COUNT_FLUSH_MS } from '../src/operations/completed-counts.js';
import type { CompletedCountDocument } from '../src/schema/documents.js';

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
