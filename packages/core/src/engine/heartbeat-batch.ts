import { nowMs, type Clock } from '../support/clock.js';
import { LeaseLostError } from '../support/errors.js';
import type { LeaseRef } from '../store/job-record.js';
import type { HeartbeatItem, HeartbeatOutcome, JobStore, LeaseExtension } from '../store/store.js';

interface Waiting {
  item: HeartbeatItem;
  resolve: (extension: LeaseExtension) => void;
  reject: (error: unknown) => void;
}

/** One instant of the shared beat: the runs whose heartbeat falls on it, and its timer. */
interface Tick {
  beats: Set<() => void>;
  cancel: () => void;
}

/**
 * Batched heartbeats, just below {@link RunLease}: the heartbeats of every run of the engine fall
 * on one shared beat, and the heartbeats due at one instant go to the store as one
 * `store.heartbeatMany` (one bulk write on MongoDB) instead of one `extendLease` each.
 *
 * The shared beat is a grid of instants one heartbeat interval apart, starting when the first run
 * asks for a heartbeat. A run asks for its next heartbeat within `ms` ({@link schedule}) and gets
 * the last instant of the grid no later than that: never later than it would beat alone, at most
 * one interval earlier (so only the first heartbeat of a run comes early). A lone run started at
 * the grid's origin beats exactly as it would alone. A heartbeat asked for outside the grid (a
 * retry sooner than an interval, or the one that resumes beats after `ctx.transaction`) is sent at
 * once on its own.
 *
 * To each run it looks like a single `store.extendLease`: {@link extend} resolves `'extended'` or
 * `'cancel-requested'`, and rejects with `LeaseLostError` (taken over, finished, or run out: the
 * run aborts), the store's error for that job alone, or the batch's error (a failed heartbeat,
 * retried by the run as before). Batches are never serialised behind one another: a store that
 * hangs on one batch does not hold the next instant's, and each run's own watchdog still ends its
 * lease when the lease runs out.
 */
export class HeartbeatBatch {
  private epoch: number | undefined;
  private readonly ticks = new Map<number, Tick>();
  /** The heartbeats of the tick being fired; undefined outside one. */
  private collecting: Waiting[] | undefined;

  constructor(private readonly deps: { store: JobStore; clock: Clock; intervalMs: number }) {}

  /**
   * Calls `beat` at the latest `ms` from now, on the shared beat when one falls in that span.
   * `beat` must call {@link extend} synchronously to join its instant's batch. Returns a function
   * that cancels it.
   */
  schedule(beat: () => void, ms: number): () => void {
    const now = nowMs(this.deps.clock);
    const period = Math.max(1, this.deps.intervalMs);
    this.epoch ??= now;
    const due = now + Math.max(0, ms);
    const onGrid = this.epoch + Math.floor((due - this.epoch) / period) * period;
    const at = onGrid > now ? onGrid : due;
    let tick = this.ticks.get(at);
    if (!tick) {
      const created: Tick = { beats: new Set(), cancel: () => {} };
      created.cancel = this.deps.clock.setTimer(() => this.fire(at, created), at - now);
      this.ticks.set(at, created);
      tick = created;
    }
    const entry = (): void => beat();
    const owner = tick;
    owner.beats.add(entry);
    return () => {
      if (!owner.beats.delete(entry) || owner.beats.size > 0) return;
      owner.cancel();
      if (this.ticks.get(at) === owner) this.ticks.delete(at);
    };
  }

  /** Extends the lease `lease` to `until` (fenced); joins the batch of the instant being fired, if any. */
  extend(lease: LeaseRef, until: Date): Promise<LeaseExtension> {
    return new Promise<LeaseExtension>((resolve, reject) => {
      const waiting: Waiting = { item: { lease, until }, resolve, reject };
      if (this.collecting) this.collecting.push(waiting);
      else this.send([waiting]);
    });
  }

  private fire(at: number, tick: Tick): void {
    if (this.ticks.get(at) === tick) this.ticks.delete(at);
    const batch: Waiting[] = [];
    this.collecting = batch;
    try {
      for (const beat of tick.beats) beat();
    } finally {
      this.collecting = undefined;
    }
    this.send(batch);
  }

  private send(batch: Waiting[]): void {
    if (batch.length === 0) return;
    let outcomes: Promise<HeartbeatOutcome[]>;
    try {
      outcomes = this.deps.store.heartbeatMany(
        batch.map((w) => w.item),
        this.deps.clock.now(),
      );
    } catch (err) {
      outcomes = Promise.reject(err);
    }
    outcomes.then(
      (results) => batch.forEach((w, i) => settle(w, results[i])),
      (err: unknown) => batch.forEach((w) => w.reject(err)),
    );
  }
}

function settle(w: Waiting, outcome: HeartbeatOutcome | undefined): void {
  const { jobId } = w.item.lease;
  if (outcome === 'extended' || outcome === 'cancel-requested') w.resolve(outcome);
  else if (outcome === 'lost')
    w.reject(new LeaseLostError(jobId, 'the store refused its heartbeat: the lease was taken over, the job finished, or the lease had run out'));
  else if (outcome === undefined) w.reject(new Error(`the store answered heartbeatMany without an outcome for job ${jobId}`));
  else w.reject(outcome.error);
}
