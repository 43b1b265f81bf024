import type { Clock } from '../support/clock.js';
import type { Logger } from '../support/logger.js';
import { withDeadline } from '../support/store-deadline.js';
import { toError } from '../support/to-error.js';
import type { JobStore } from '../store/store.js';
import type { EventBus } from './events.js';

/**
 * Keeps this engine from claiming while its clock disagrees with the database's by more than
 * `maxSkewMs`. Leases are judged by the `now` each engine passes to the store: an engine whose
 * clock runs 60 s behind would see other engines' live leases as long expired and take their jobs
 * over at once (two runs of one job at the same time). So the skew is measured against the
 * store's clock (`store.serverTime`, round-trip compensated) when the engine starts and every
 * `everyMs` after, and claiming pauses while it is too large. Runs in flight keep their leases.
 * Stores without `serverTime` are not checked.
 */
export class ClockSkewGuard {
  /** Until the first measurement answers, nothing is claimed: a skewed engine must not claim at start. */
  private blocked = true;
  private measured = false;
  private stopped = false;
  private cancelTimer: (() => void) | undefined;
  /** The last measured skew (database minus this engine), in ms. */
  lastSkewMs: number | undefined;

  constructor(
    private readonly deps: {
      store: JobStore;
      clock: Clock;
      logger: Logger;
      events: EventBus;
      maxSkewMs: number;
      everyMs: number;
      /** How long one measurement may take before it counts as failed: the lease, as for a claim. */
      deadlineMs: number;
      /** Called when claiming is allowed again after a block. */
      onUnblocked: () => void;
    },
  ) {}

  /** True while this engine may claim. */
  get allowsClaims(): boolean {
    return !this.blocked;
  }

  /** Measures once now, then every `everyMs` until `stop`. Resolves after the first measurement. */
  async start(): Promise<void> {
    if (!this.deps.store.serverTime) {
      this.blocked = false;
      return;
    }
    this.stopped = false;
    await this.check();
  }

  stop(): void {
    this.stopped = true;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
  }

  /** One measurement. A failed one is logged and changes nothing (the next one decides). */
  async check(): Promise<void> {
    const { store, clock, logger, maxSkewMs } = this.deps;
    try {
      const before = clock.now().getTime();
      // Bounded: a read that never answers would stop every later measurement (and, the first
      // one, the engine's start).
      const server = await withDeadline(clock, 'serverTime', this.deps.deadlineMs, store.serverTime!());
      const after = clock.now().getTime();
      const skew = server.getTime() - (before + after) / 2;
      this.lastSkewMs = skew;
      // The server read its clock somewhere within the round trip: only a skew that exceeds the
      // limit by more than half the round trip is certainly too large (a slow answer is no skew).
      const tooLarge = Math.abs(skew) - (after - before) / 2 > maxSkewMs;
      if (tooLarge && (this.blocked === false || !this.measured)) {
        this.blocked = true;
        const direction = skew > 0 ? 'behind' : 'ahead of';
        logger.error(
          { skewMs: Math.round(skew), maxClockSkewMs: maxSkewMs },
          `This engine's clock is ${Math.round(Math.abs(skew))} ms ${direction} the database's (at most ${maxSkewMs} ms allowed: a tenth of the lease): ` +
            "it stops claiming jobs until they agree, so it cannot take over jobs whose leases are still live. Sync this host's clock (NTP/chrony); runs in flight keep their leases",
        );
        this.deps.events.emit('worker:error', { error: new Error(`clock skew ${Math.round(skew)} ms exceeds ${maxSkewMs} ms`), operation: 'clockSkew' });
      } else if (!tooLarge && this.blocked) {
        if (this.measured)
          logger.info({ skewMs: Math.round(skew) }, `This engine's clock agrees with the database's again (skew ${Math.round(skew)} ms); claiming resumes`);
        this.unblock();
      }
    } catch (err) {
      const error = toError(err);
      logger.warn({ err: error }, `Could not read the database's clock to measure this engine's skew (${error.message}); will try again`);
      // The first measurement failing must not stop the engine for good: claims face the same store.
      if (!this.measured) this.unblock();
    } finally {
      this.measured = true;
      if (!this.stopped) {
        this.cancelTimer?.();
        this.cancelTimer = clock.setTimer(() => void this.check(), this.deps.everyMs);
      }
    }
  }

  private unblock(): void {
    this.blocked = false;
    this.deps.onUnblocked();
  }
}
