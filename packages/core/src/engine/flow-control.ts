import type { Clock } from '../support/clock.js';
import type { StoreOutage } from './store-outage.js';
import type { EventBus } from './events.js';
import type { FlowHold, FlowHoldRecord, FlowLimits } from '../store/flow.js';
import type { JobDefinition } from '../jobs/job-definition.js';
import type { JobRecord } from '../store/job-record.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import type { Logger } from '../support/logger.js';
import type { JobStore } from '../store/store.js';
import { toError } from '../support/to-error.js';
import { withDeadline } from '../support/store-deadline.js';

export interface FlowControlDeps {
  store: JobStore;
  clock: Clock;
  logger: Logger;
  events: EventBus;
  registry: JobRegistry;
  pollMs: number;
  /** How long a read of the holds may take before it counts as failed: the lease, as for a claim. */
  leaseMs: number;
  /** Asks the worker pool to claim (a window opened). */
  wake: () => void;
  /** The engine's one view of a store outage (see store-outage.ts). */
  outage?: StoreOutage;
}

/** Why this engine leaves a name out of its claims for now, and until when (ms). */
interface Held {
  until: number;
  by: FlowHold['by'];
}

/** The limits of a job definition as a claim carries them, or undefined when it has none. */
export function flowLimitsOf(def: JobDefinition): FlowLimits | undefined {
  if (def.globalConcurrency === undefined && !def.rateLimit && !def.group) return undefined;
  const limits: FlowLimits = { name: def.name };
  if (def.globalConcurrency !== undefined) limits.globalConcurrency = def.globalConcurrency;
  if (def.rateLimit) limits.rateLimit = { limit: def.rateLimit.limit, perMs: def.rateLimit.perMs, ...(def.rateLimit.key ? { keyed: true } : {}) };
  if (def.group) limits.group = { concurrency: def.group.concurrency };
  return limits;
}

/**
 * One engine's side of flow control. The store enforces every limit inside the claim; this module
 * hands it the limits (`claimFlow`) and keeps the engine from claiming in vain: a name the store
 * reported held is left out of claims until its window opens — the engine then wakes its worker
 * pool at that instant, so held jobs cost no polling — or, when held by concurrency, until a run of
 * it ends here or the next poll (a slot freed by another process is seen then). Holds made by
 * `RateLimitedError` in any process are read from the store every poll interval, so names without
 * limits of their own are held here too.
 */
export class FlowControl {
  readonly #limits = new Map<string, FlowLimits>();
  readonly #held = new Map<string, Held>();
  /** Name holds read from the store (names without limits must be listed in claims to be checked). */
  #storeHolds = new Map<string, number>();
  #holdsReadAt = -Infinity;
  #reading = false;
  #wakeAt = Infinity;
  #cancelWake: (() => void) | undefined;

  constructor(private readonly deps: FlowControlDeps) {
    for (const def of deps.registry.all()) {
      const limits = flowLimitsOf(def);
      if (limits) this.#limits.set(def.name, limits);
    }
  }

  /** The `flow` of a claim over `names`: their limits, and the names held in the store. */
  claimFlow(names: readonly string[], now: number): FlowLimits[] | undefined {
    const flow: FlowLimits[] = [];
    for (const name of names) {
      const limits = this.#limits.get(name);
      if (limits) flow.push(limits);
      else if ((this.#storeHolds.get(name) ?? -Infinity) > now) flow.push({ name });
    }
    return flow.length > 0 ? flow : undefined;
  }

  /** Whether this engine leaves `name` out of its claims at `now`. */
  isHeld(name: string, now: number): boolean {
    const held = this.#held.get(name);
    if (!held) return false;
    if (held.until > now) return true;
    this.#held.delete(name);
    return false;
  }

  /** What a claim reported holding back. */
  onHeld(holds: FlowHold[]): void {
    const now = this.deps.clock.now().getTime();
    for (const hold of holds) {
      const until = hold.until?.getTime();
      if (hold.key === undefined) {
        // Concurrency frees when a run ends anywhere: look again at the next poll at the latest.
        const end = hold.by === 'rateLimit' && until !== undefined ? until : Math.min(until ?? Infinity, now + this.deps.pollMs);
        this.#hold(hold.name, { until: end, by: hold.by });
      }
      if (until !== undefined && hold.by === 'rateLimit') this.#wakeAtOrBefore(until);
    }
  }

  /** A run of `name` ended in this engine: a concurrency slot may be free. */
  runEnded(name: string): void {
    const held = this.#held.get(name);
    if (held && held.by !== 'rateLimit') this.#held.delete(name);
  }

  /** The hold a `RateLimitedError` of `job` asks for: its rate-limit key's when the limit is keyed, else its name's. */
  holdFor(job: JobRecord, def: JobDefinition, retryAfterMs: number, now: Date): FlowHoldRecord {
    const until = new Date(now.getTime() + retryAfterMs);
    return def.rateLimit?.key && job.rateLimitKey !== undefined ? { name: job.name, key: job.rateLimitKey, until } : { name: job.name, until };
  }

  /** This engine stored `hold`: it acts on it at once (the others read it from the store). */
  noteHold(hold: FlowHoldRecord): void {
    const until = hold.until.getTime();
    if (hold.key === undefined) {
      this.#hold(hold.name, { until, by: 'rateLimit' });
      this.#storeHolds.set(hold.name, Math.max(this.#storeHolds.get(hold.name) ?? -Infinity, until));
    }
    this.#wakeAtOrBefore(until);
  }

  /**
   * Starts a read of the holds in the store when the last one is a poll interval old; claims go on
   * meanwhile (the answer applies from the next claim on). A failed read keeps the last answer
   * (and is logged): the holds of names with limits are enforced by the store anyway.
   */
  refreshIfDue(): void {
    const now = this.deps.clock.now();
    if (this.#reading || now.getTime() - this.#holdsReadAt < this.deps.pollMs) return;
    this.#holdsReadAt = now.getTime();
    this.#reading = true;
    void this.#read(now).finally(() => {
      this.#reading = false;
    });
  }

  async #read(now: Date): Promise<void> {
    const { store } = this.deps;
    try {
      // Bounded: a read that never answered kept every later one from starting (refreshIfDue).
      const holds = await withDeadline(this.deps.clock, 'flowHolds', this.deps.leaseMs, store.flowHolds(now));
      const byName = new Map<string, number>();
      for (const hold of holds) {
        if (hold.key !== undefined || !this.deps.registry.byName(hold.name)) continue;
        byName.set(hold.name, Math.max(byName.get(hold.name) ?? -Infinity, hold.until.getTime()));
      }
      this.#storeHolds = byName;
      this.deps.outage?.succeeded('flowHolds');
    } catch (err) {
      const error = toError(err);
      const level = this.deps.outage?.failed('flowHolds', error) ? 'debug' : 'error';
      this.deps.logger[level]({ err: error }, `Reading the flow-control holds failed (${error.message}); going on with the last known ones`);
      this.deps.events.emit('worker:error', { error, operation: 'flowHolds' });
    }
  }

  /** Stops the wake timer (the engine stops). */
  stop(): void {
    this.#cancelWake?.();
    this.#cancelWake = undefined;
    this.#wakeAt = Infinity;
  }

  #hold(name: string, held: Held): void {
    const current = this.#held.get(name);
    if (!current || current.until < held.until) this.#held.set(name, held);
  }

  /** Wakes the pool at `at` (ms), unless a wake at or before it is already set. */
  #wakeAtOrBefore(at: number): void {
    if (at >= this.#wakeAt) return;
    this.#cancelWake?.();
    this.#wakeAt = at;
    const delay = Math.max(0, at - this.deps.clock.now().getTime());
    this.#cancelWake = this.deps.clock.setTimer(() => {
      this.#cancelWake = undefined;
      this.#wakeAt = Infinity;
      this.deps.wake();
      // The next window of a name left out of claims opens later: wake for it too.
      const now = this.deps.clock.now().getTime();
      let next = Infinity;
      for (const held of this.#held.values()) if (held.by === 'rateLimit' && held.until > now) next = Math.min(next, held.until);
      if (next < Infinity) this.#wakeAtOrBefore(next);
    }, delay);
  }
}
