import type { JobStore } from '@loom/core';

/** Counts a store's operations so a harness can tell when nothing is happening any more. */
export interface StoreActivity {
  /** Operations started and not yet settled, minus those written off as hung. */
  readonly pending: number;
  /** Operations settled so far. */
  readonly settled: number;
  /**
   * Stops counting the operations pending now: the harness calls this when they have hung long
   * enough to be deliberate, so later waits do not stall on them again.
   */
  writeOffPending(): void;
}

/**
 * Wraps `store` in a proxy that counts its operations. Optional methods the store lacks stay
 * absent, so the engine still sees exactly the store's capabilities.
 */
export function trackStoreActivity(store: JobStore): { store: JobStore; activity: StoreActivity } {
  const pending = new Set<symbol>();
  let settled = 0;
  const activity: StoreActivity = {
    get pending() {
      return pending.size;
    },
    get settled() {
      return settled;
    },
    writeOffPending() {
      pending.clear();
    },
  };
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (!(result instanceof Promise)) return result;
        const op = Symbol(String(prop));
        pending.add(op);
        return result.finally(() => {
          pending.delete(op);
          settled++;
        });
      };
    },
  });
  return { store: wrapped, activity };
}
