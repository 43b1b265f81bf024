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
 * Operations that only read: they never change a job's due time or lease. Any other operation
 * counts as a write (see {@link storeWritesSettled}), except a claim that took nothing and a
 * dependents' settle that settled none.
 */
const READS = new Set<string | symbol>([
  'getJob',
  'listJobs',
  'listJobPage',
  'stats',
  'listDeadLetters',
  'listSchedules',
  'pausedQueues',
  'listQueues',
  'countFinished',
  'nextClaimableAt',
  'queueSeries',
  'getBatch',
  'batchFailures',
  'listPresence',
  'listWaitTokens',
  'getWaitToken',
  'isWaitingFor',
  'findActiveChild',
  'flowHolds',
  'flowUsage',
  'serverTime',
]);

/** Writes settled through every tracked store of this process. */
let writesSettled = 0;

/**
 * How many store writes (operations that may have changed a job's due time or lease) have settled
 * through any store wrapped by {@link trackStoreActivity} in this process. A harness that read the
 * jobs' due times when this was N can reuse them while it still is N.
 */
export function storeWritesSettled(): number {
  return writesSettled;
}

/** Whether a settled operation may have changed a job: a write, unless its answer says it did nothing. */
function changedSomething(prop: string | symbol, settled: PromiseSettledResult<unknown>): boolean {
  if (READS.has(prop)) return false;
  if (settled.status === 'rejected') return true;
  if (prop === 'claim') return !Array.isArray(settled.value) || settled.value.length > 0;
  if (prop === 'settleDependents') return settled.value !== 0;
  return true;
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
        const done = (outcome: PromiseSettledResult<unknown>): void => {
          pending.delete(op);
          settled++;
          if (changedSomething(prop, outcome)) writesSettled++;
        };
        return result.then(
          (value: unknown) => {
            done({ status: 'fulfilled', value });
            return value;
          },
          (reason: unknown) => {
            done({ status: 'rejected', reason });
            throw reason;
          },
        );
      };
    },
  });
  return { store: wrapped, activity };
}
