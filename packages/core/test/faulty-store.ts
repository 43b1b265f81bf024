import type { JobStore } from '@loom/core';

/**
 * Wraps a store so that chosen operations fail with a network-style error: `failures[op]` times,
 * or forever with `Infinity` (a partitioned worker). Counts the failures it caused.
 */
export function faultyStore(store: JobStore, failures: Partial<Record<keyof JobStore, number>>): { store: JobStore; caused: Record<string, number> } {
  const left: Record<string, number> = { ...failures };
  const caused: Record<string, number> = {};
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      return (...args: unknown[]) => {
        if ((left[prop] ?? 0) > 0) {
          left[prop]!--;
          caused[prop] = (caused[prop] ?? 0) + 1;
          return Promise.reject(new Error(`connection reset during ${prop}`));
        }
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: wrapped, caused };
}
