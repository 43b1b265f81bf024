import { MemoryStore } from '@loom/core';

/**
 * `store` (a new MemoryStore by default) whose method `method` never answers on its `nth` call,
 * the others going through: a request lost on a connection nobody reset. `calls` counts them.
 */
export function hangingOnCall(method: keyof MemoryStore, nth = 1, store = new MemoryStore()): { store: MemoryStore; calls: () => number } {
  let calls = 0;
  const hanging = new Proxy(store, {
    get: (target, prop) => {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      const bound = (value as (...args: unknown[]) => unknown).bind(target);
      if (prop !== method) return bound;
      return (...args: unknown[]) => (++calls === nth ? new Promise(() => {}) : bound(...args));
    },
  });
  return { store: hanging, calls: () => calls };
}
