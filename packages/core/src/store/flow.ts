import { LoomError } from '../support/errors.js';

/**
 * Flow control in the store contract: the limits a claim carries and what a claim reports back.
 * Every limit holds across all engines sharing one store, because the store enforces it inside
 * the claim, atomically (see `OPERATIONS.md`, "Flow control").
 */

/** Why a job that is due does not start: what `heldBy` says on a job summary. */
export type FlowHeldBy = 'rateLimit' | 'globalConcurrency' | 'group' | 'paused';

/**
 * The flow limits of one job name, as a claim hands them to the store (from the job's `@Job`
 * options). A name listed with no limit at all is still subject to {@link JobStore.holdFlow}: that
 * is how an engine asks the store to check the holds of a name it learnt about.
 */
export interface FlowLimits {
  name: string;
  /** At most this many jobs of the name run at once (leases not expired), across all engines. */
  globalConcurrency?: number;
  /**
   * At most `limit` starts of the name in any window of `perMs` (a sliding window: every start
   * counts until `perMs` after it). With `keyed`, per `rateLimitKey` of the job instead.
   */
  rateLimit?: { limit: number; perMs: number; keyed?: boolean };
  /**
   * At most `concurrency` running jobs per `groupKey`; the keys with claimable jobs take turns, so a
   * key with one job is not served after another key's whole backlog.
   */
  group?: { concurrency: number };
}

/** Something a claim found holding due jobs back. */
export interface FlowHold {
  name: string;
  /** The group key or rate-limit key, when the hold is on one key rather than the whole name. */
  key?: string;
  by: Exclude<FlowHeldBy, 'paused'>;
  /**
   * When it opens, where the store knows: a rate window's next free start, the end of a
   * {@link JobStore.holdFlow}, or (for concurrency) the earliest end of a running job's lease.
   */
  until?: Date;
}

/** A hold of a name (or of one rate-limit key) until an instant, as {@link JobStore.holdFlow} writes it. */
export interface FlowHoldRecord {
  name: string;
  key?: string;
  until: Date;
}

/**
 * One flow limit and its use at an instant, as {@link JobStore.flowUsage} reports it: the limits of
 * a whole name (always, once an engine's claim told the store them), and those of single group and
 * rate-limit keys that are in use or held.
 */
export interface FlowUsage {
  name: string;
  /** The group key (kind `group`) or rate-limit key (keyed `rateLimit`); absent for the whole name. */
  key?: string;
  kind: 'globalConcurrency' | 'group' | 'rateLimit';
  /** Running jobs at once (concurrency kinds), or starts per window; absent when only a hold is known. */
  limit?: number;
  /** A rate limit's window, in ms. */
  perMs?: number;
  /** Running jobs whose lease has not expired (concurrency kinds), or starts inside the window. */
  used: number;
  /** No start before this instant (a `RateLimitedError`, `holdFlow`). */
  heldUntil?: Date;
}

/** The most entries {@link JobStore.flowUsage} returns (a name with many keys in use fills it). */
export const MAX_FLOW_USAGE = 500;

const KIND_ORDER = { globalConcurrency: 0, rateLimit: 1, group: 2 } as const;

/** Report order: by name, the whole name's limits first, then keys in order. */
export function compareFlowUsage(a: FlowUsage, b: FlowUsage): number {
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  if ((a.key === undefined) !== (b.key === undefined)) return a.key === undefined ? -1 : 1;
  if (a.kind !== b.kind) return KIND_ORDER[a.kind] - KIND_ORDER[b.kind];
  const ak = a.key ?? '';
  const bk = b.key ?? '';
  return ak < bk ? -1 : ak > bk ? 1 : 0;
}

/** Longest group, rate-limit or debounce key accepted: keys are indexed. */
export const MAX_FLOW_KEY_LENGTH = 1_024;

/** The most `globalConcurrency` or group `concurrency` a store has to track per name or key. */
export const MAX_FLOW_CONCURRENCY = 10_000;

/** The most starts a rate limit may allow per window (each start inside the window is remembered). */
export const MAX_RATE_LIMIT = 10_000;

/**
 * Checks the `flow` of a claim request (stores call it before using any of it): a list of limits
 * with a string name and positive integer limits. Throws `INVALID_ARGUMENT` naming the field.
 */
export function assertFlowLimits(flow: unknown, store: string): asserts flow is FlowLimits[] | undefined {
  if (flow === undefined) return;
  const bad = (what: string, detail: string): LoomError => new LoomError('INVALID_ARGUMENT', `${store}: claim flow ${what} ${detail}; nothing was claimed`);
  if (!Array.isArray(flow)) throw bad('', 'must be an array of { name, globalConcurrency?, rateLimit?, group? }');
  const count = (value: unknown, what: string, max: number): void => {
    if (value !== undefined && (!Number.isInteger(value) || (value as number) < 1 || (value as number) > max))
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- shows the value as the caller gave it, whatever it is
      throw bad(what, `must be an integer from 1 to ${max}, got ${String(value)}`);
  };
  for (const [i, limits] of flow.entries()) {
    if (typeof limits !== 'object' || limits === null) throw bad(`[${i}]`, 'must be an object');
    const { name, globalConcurrency, rateLimit, group } = limits as FlowLimits;
    if (typeof name !== 'string') throw bad(`[${i}].name`, 'must be a string');
    count(globalConcurrency, `[${i}].globalConcurrency`, MAX_FLOW_CONCURRENCY);
    if (rateLimit !== undefined) {
      if (typeof rateLimit !== 'object' || rateLimit === null) throw bad(`[${i}].rateLimit`, 'must be { limit, perMs, keyed? }');
      count(rateLimit.limit, `[${i}].rateLimit.limit`, MAX_RATE_LIMIT);
      if (rateLimit.limit === undefined) throw bad(`[${i}].rateLimit.limit`, 'is required');
      if (typeof rateLimit.perMs !== 'number' || !Number.isFinite(rateLimit.perMs) || rateLimit.perMs <= 0)
        throw bad(`[${i}].rateLimit.perMs`, `must be a number > 0, got ${String(rateLimit.perMs)}`);
      if (rateLimit.keyed !== undefined && typeof rateLimit.keyed !== 'boolean') throw bad(`[${i}].rateLimit.keyed`, 'must be a boolean');
    }
    if (group !== undefined) {
      if (typeof group !== 'object' || group === null || group.concurrency === undefined) throw bad(`[${i}].group`, 'must be { concurrency }');
      count(group.concurrency, `[${i}].group.concurrency`, MAX_FLOW_CONCURRENCY);
    }
  }
}

/**
 * Hands a claim's holds to the claim's `onHeld`. The claimed jobs are leased by then, so a listener
 * that throws must not fail the claim (they would sit leased until their lease ended): its error
 * is thrown on its own, where the process reports uncaught errors. For stores.
 */
export function reportFlowHolds(listener: ((holds: FlowHold[]) => void) | undefined, holds: FlowHold[]): void {
  if (!listener || holds.length === 0) return;
  try {
    listener(holds);
  } catch (error) {
    queueMicrotask(() => {
      throw error;
    });
  }
}
