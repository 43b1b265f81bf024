import type { Clock } from '../support/clock.js';
import { LeaseLostError, LoomError } from '../support/errors.js';
import type { EventBus } from './events.js';
import type { LeaseRef } from '../store/job-record.js';
import type { Logger } from '../support/logger.js';
import type { JobStore } from '../store/store.js';
import { toError } from '../support/to-error.js';

/** How often a lease is extended while its handler runs: every third of it. */
export const heartbeatInterval = (leaseMs: number): number => Math.max(1, Math.floor(leaseMs / 3));

/**
 * Keeps one run's lease alive: extends it every `leaseMs / 3` while the handler runs. When the
 * store says the lease is lost, or extending keeps failing until the lease has passed, it calls
 * `onLost` (the runner aborts `ctx.signal`). A failed extension is retried before the lease ends.
 */
export class LeaseKeeper {
  private cancelTimer: (() => void) | undefined;
  private cancelDeadline: (() => void) | undefined;
  private stopped = false;
  private leaseUntil: Date;

  constructor(
    private readonly deps: {
      store: JobStore;
      clock: Clock;
      logger: Logger;
      events: EventBus;
      lease: LeaseRef;
      leaseMs: number;
      until: Date;
      onLost: (error: LeaseLostError) => void;
      /** Where heartbeats are timed (the runner shares one list for all runs); default the clock. */
      beats?: Pick<Clock, 'setTimer'>;
    },
  ) {
    this.leaseUntil = deps.until;
  }

  /** When the lease currently ends, as far as this worker knows. */
  get until(): Date {
    return this.leaseUntil;
  }

  start(): void {
    // The watchdog only matters while an extension is in flight: between beats nothing can end a
    // lease that the next beat comes before. So it is armed per beat, not per run (one timer less
    // per job), and here only when the claim came back so late that the lease ends before the first beat.
    if (this.leaseUntil.getTime() - this.deps.clock.now().getTime() <= this.interval()) this.armDeadline();
    this.schedule(this.interval());
  }

  stop(): void {
    this.stopped = true;
    this.cancelTimer?.();
    this.cancelDeadline?.();
  }

  /**
   * A watchdog at the lease's end: if no extension succeeded by then (the store hangs rather than
   * failing), the lease is treated as lost instead of the run carrying on unaware. Stays armed
   * from the start of an extension until one succeeds.
   */
  private armDeadline(): void {
    this.cancelDeadline?.();
    const ms = this.leaseUntil.getTime() - this.deps.clock.now().getTime();
    this.cancelDeadline = this.deps.clock.setTimer(() => {
      if (!this.stopped) this.lost(new LeaseLostError(this.deps.lease.jobId, 'the lease ran out before this worker could extend it'));
    }, Math.max(0, ms));
  }

  private interval(): number {
    return heartbeatInterval(this.deps.leaseMs);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.cancelTimer = (this.deps.beats ?? this.deps.clock).setTimer(() => void this.beat(), ms);
  }

  private async beat(): Promise<void> {
    if (this.stopped) return;
    const { store, clock, lease, leaseMs } = this.deps;
    const now = clock.now();
    const until = new Date(now.getTime() + leaseMs);
    this.armDeadline();
    try {
      await store.extendLease(lease, until, now);
      if (this.stopped) return;
      this.leaseUntil = until;
      this.cancelDeadline?.();
      this.cancelDeadline = undefined;
      this.schedule(this.interval());
    } catch (err) {
      if (this.stopped) return;
      if (LoomError.is(err, 'LEASE_LOST')) return this.lost(err as LeaseLostError);
      const error = toError(err);
      this.deps.logger.warn({ err: error, jobId: lease.jobId }, `Job ${lease.jobId}: extending the lease failed; retrying before it ends`);
      this.deps.events.emit('worker:error', { error, operation: 'extendLease', jobId: lease.jobId });
      const remaining = this.leaseUntil.getTime() - clock.now().getTime();
      if (remaining <= 0) return this.lost(new LeaseLostError(lease.jobId, 'the lease ran out while the store could not be reached to extend it'));
      this.schedule(Math.min(this.interval(), remaining));
    }
  }

  private lost(error: LeaseLostError): void {
    this.stop();
    this.deps.logger.warn({ jobId: this.deps.lease.jobId }, error.message);
    this.deps.onLost(error);
  }
}
