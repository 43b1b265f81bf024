import type { JobStore } from '@loom/core';

/** Counts a store's operations so a harness can tell when nothing is happening any more. */
export interface StoreActivity {
  /** Operations started and not yet settled. */
  readonly pending: number;
  /** Operations settled so far. */
  readonly settled: number;
}

/**
 * Wraps `store` in a proxy that counts its operations. Optional methods the store lacks stay
 * absent, so the engine still sees exactly the store's capabilities.
 */
export function trackStoreActivity(store: JobStore): { store: JobStore; activity: StoreActivity } {
  const activity = { pending: 0, settled: 0 };
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (!(result instanceof Promise)) return result;
        activity.pending++;
        return result.finally(() => {
          activity.pending--;
          activity.settled++;
        });
      };
    },
  });
  return { store: wrapped, activity };
}
