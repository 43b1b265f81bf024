/// <reference types="jest" />
import type { JobStore } from '@loom/core';
import { describeBatches } from './conformance/batches.js';
import { describeClaim } from './conformance/claim.js';
import { describeCompleteMany } from './conformance/complete-many.js';
import { describeHeartbeatMany } from './conformance/heartbeat-many.js';
import { describeDeadLetters } from './conformance/dead-letters.js';
import { describeDependencies } from './conformance/dependencies.js';
import { describeEnqueue } from './conformance/enqueue.js';
import { describeFinishedCounts } from './conformance/finished-counts.js';
import { describeNextClaimable } from './conformance/next-claimable.js';
import { describeFlow } from './conformance/flow.js';
import { describeFencing } from './conformance/fencing.js';
import type { ConformanceContext } from './conformance/harness.js';
import { describeOperations } from './conformance/operations.js';
import { describePayloads } from './conformance/payloads.js';
import { describePresence } from './conformance/presence.js';
import { describeQueueSeries } from './conformance/queue-series.js';
import { describeQueries } from './conformance/queries.js';
import { describeSchedules } from './conformance/schedules.js';
import { describeServerTime } from './conformance/server-time.js';
import { describeSignals } from './conformance/signals.js';
import { describeWaitTokens } from './conformance/wait-tokens.js';
import { describeTransactions } from './conformance/transactions.js';
import { describeTransitions } from './conformance/transitions.js';
import { describeLifecycle } from './conformance/lifecycle.js';

export { REFERENCE as CONFORMANCE_REFERENCE_TIME } from './conformance/harness.js';
export { yieldingStore, type YieldingStoreOptions } from './conformance/yielding-store.js';

/** A fresh, empty store for one test, and how to dispose of it afterwards. */
export interface ConformanceStore {
  store: JobStore;
  /**
   * Another store on the same data, as a second process would open it (e.g. a second MongoStore
   * on the same database). The flow-control tests claim through both, as two engines would. Stores
   * that live in one process (MemoryStore) leave it out: the tests then use `store` twice.
   */
  peer?: () => JobStore | Promise<JobStore>;
  /** Runs after the store is closed (e.g. drops the test database). */
  cleanup?: () => Promise<void>;
}

/** Options of {@link describeStoreConformance}. */
export interface ConformanceOptions {
  /**
   * Whether to test `withTransaction`. Default true: the store must then implement it. A store
   * without transactions passes `false` (and the engine refuses `ctx.transaction` on it); its
   * `createBatch` must then refuse with `TRANSACTIONS_UNSUPPORTED` (batches need atomic writes). Such a
   * store must also refuse jobs with dependencies (`dependsOn`), storing nothing: without a
   * transaction their link to their dependencies could miss a dependency's end. The suite then
   * checks that refusal instead of the dependency cases.
   */
  transactions?: boolean;
  /**
   * The store splits queues into partitions and claims them in turn (MongoStore with `partitions`):
   * claim order holds within a partition, not across. The cases asserting one order over a whole
   * queue (or which job a flow limit lets start first) are skipped, and a case runs instead that
   * asserts what holds across partitions (a claim hides no due job and takes none twice; single
   * claims take every due job in as many claims); everything else runs. Default false.
   */
  partitioned?: boolean;
}

/**
 * The jest suite every {@link JobStore} must pass. Call it at the top level of a test file:
 *
 * ```ts
 * import { MemoryStore } from '@loom/core';
 * import { describeStoreConformance } from '@loom/testing/jest';
 *
 * describeStoreConformance('MemoryStore', () => ({ store: new MemoryStore() }));
 * ```
 *
 * `factory` runs before every test and must return an empty store; the suite calls `init()` on
 * it, and `close()` then `cleanup()` after the test. The tests rely only on the `JobStore` contract
 * (never on id formats), use fixed times from a reference instant (never the wall clock), and run
 * truly concurrent calls with `Promise.all` where a store must be atomic.
 *
 * Those concurrency tests prove atomicity only on a store that can interleave: one with I/O, or
 * one that awaits between reading and writing (every call then reads before any writes, and a
 * non-atomic store fails). A store that performs each call without awaiting, like MemoryStore,
 * passes them by construction. Run the suite also through {@link yieldingStore}, as MemoryStore's
 * own tests do, to have concurrent calls arrive in varied orders between other calls' answers.
 *
 * Uses jest's global `describe`/`it`/`expect`, so it works only inside a jest test file.
 */
export function describeStoreConformance(name: string, factory: () => Promise<ConformanceStore> | ConformanceStore, options: ConformanceOptions = {}): void {
  describe(`JobStore conformance: ${name}`, () => {
    let current: ConformanceStore | undefined;
    let peer: JobStore | undefined;

    beforeEach(async () => {
      current = await factory();
      await current.store.init();
    });

    afterEach(async () => {
      const done = current;
      const donePeer = peer;
      current = undefined;
      peer = undefined;
      if (!done) return;
      try {
        await donePeer?.close();
        await done.store.close();
      } finally {
        await done.cleanup?.();
      }
    });

    const ctx: ConformanceContext = {
      partitioned: options.partitioned === true,
      get store(): JobStore {
        if (!current) throw new Error('The conformance store exists only while a test runs');
        return current.store;
      },
      async peer(): Promise<JobStore> {
        if (!current) throw new Error('The conformance store exists only while a test runs');
        if (!current.peer) return current.store;
        if (!peer) {
          peer = await current.peer();
          await peer.init();
        }
        return peer;
      },
    };

    describeEnqueue(ctx);
    describeClaim(ctx);
    describeTransitions(ctx);
    describeLifecycle(ctx, { dependencies: options.transactions !== false });
    describeDependencies(ctx, { supported: options.transactions !== false });
    describeCompleteMany(ctx);
    describeHeartbeatMany(ctx);
    describeFencing(ctx);
    describeDeadLetters(ctx);
    describeSignals(ctx);
    describeWaitTokens(ctx);
    describeQueries(ctx);
    describeSchedules(ctx);
    describeServerTime(ctx);
    describeOperations(ctx);
    describeFinishedCounts(ctx);
    describeNextClaimable(ctx);
    describeFlow(ctx);
    describePresence(ctx);
    describeQueueSeries(ctx);
    describeBatches(ctx, options.transactions !== false);
    describePayloads(ctx, { transactions: options.transactions !== false });
    if (options.transactions !== false) describeTransactions(ctx);
  });
}
