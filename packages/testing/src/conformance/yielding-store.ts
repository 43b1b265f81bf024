import type { JobStore } from '@loom/core';

/** Options of {@link yieldingStore}. */
export interface YieldingStoreOptions {
  /**
   * The most event-loop turns a call waits before it reaches the store, and again before its
   * answer comes back. Call n waits `n % (maxTurns + 1)` turns each way: a fixed pattern, so a
   * failure reproduces. @default 3
   */
  maxTurns?: number;
}

/** The contract's methods that answer at once rather than with a promise: passed through as they are. */
const SYNCHRONOUS = new Set<PropertyKey>(['isTransientError', 'subscribe'] satisfies (keyof JobStore)[]);

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await nextTurn();
}

/**
 * Wraps `store` so that each call reaches it, and each answer comes back, after a few event-loop
 * turns that vary from call to call. Calls started together (`Promise.all`) then reach the store
 * in another order than they were made, with other calls' answers and writes in between, as they
 * would over a network. Methods the store lacks stay absent; everything else passes through.
 *
 * What it does not do: make a store that performs each call without awaiting (MemoryStore) any
 * less atomic. Such a store passes the conformance suite's concurrency tests by construction; the
 * wrapper exercises what it keeps between calls (lazy sweeps, indexes, key maps) under arrival
 * orders the plain suite never produces. Atomicity within a call is proven on stores with I/O
 * (MongoStore runs the same suite over the wire), or on any store whose operation awaits between
 * its read and its write: the plain suite's `Promise.all` then lets every call read first.
 */
export function yieldingStore(store: JobStore, options: YieldingStoreOptions = {}): JobStore {
  const period = (options.maxTurns ?? 3) + 1;
  let calls = 0;
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (SYNCHRONOUS.has(prop)) return (value as (...a: unknown[]) => unknown).bind(target);
      return async (...args: unknown[]) => {
        const wait = calls++ % period;
        await turns(wait);
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } finally {
          await turns(period - 1 - wait);
        }
      };
    },
  });
}
