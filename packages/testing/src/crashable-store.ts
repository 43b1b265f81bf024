import type { JobStore } from '@loom/core';

/** A store handle that can simulate the death of the process using it. */
export interface CrashableStore {
  /** Hand this to the engine that is going to "die". */
  readonly store: JobStore;
  /**
   * From now on every call through `store` hangs forever and subscriptions go quiet, as if the
   * process had frozen or died: no heartbeat, no completion, no release reaches the real store.
   * Leases it held expire, and an engine on the real store takes the jobs over.
   */
  crash(): void;
  readonly crashed: boolean;
}

/**
 * Wraps `store` for process-death tests: the engine under test uses `store`, the test calls
 * `crash()` at the moment of death, and a second engine on the unwrapped store recovers.
 * Optional methods the store lacks stay absent.
 */
export function crashableStore(inner: JobStore): CrashableStore {
  let crashed = false;
  const never = new Promise<never>(() => {});
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (prop === 'subscribe') {
        return (listener: (event: { queue: string; runAt: Date }) => void) =>
          (value as JobStore['subscribe'])!.call(target, (event) => {
            if (!crashed) listener(event);
          });
      }
      return (...args: unknown[]) => (crashed ? never : (value as (...a: unknown[]) => unknown).apply(target, args));
    },
  });
  return {
    store,
    crash: () => {
      crashed = true;
    },
    get crashed() {
      return crashed;
    },
  };
}
