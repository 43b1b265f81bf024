import { nowMs, type Clock } from '../support/clock.js';
import { CancelledError, LeaseLostError, StoreTimeoutError } from '../support/errors.js';
import type { LeaseRef } from '../store/job-record.js';
import type { CompletionItem, CompletionOutcome, JobStore } from '../store/store.js';
import { withDeadline } from '../support/store-deadline.js';
import { onceAfterThisTurn } from '../support/after-this-turn.js';
import { plainConstructor } from '../support/plain-constructor.js';
import { mapPacked } from '../support/packed-map.js';

/** A completion waiting for its batch: a class, not a literal (it points to its run's promise; see support/plain-constructor.ts). */
class Waiting {
  /** Resolved, rejected or timed out: later answers about it are ignored. */
  settled = false;

  constructor(
    readonly item: CompletionItem,
    /** The clock's instant (ms) after which this caller stops waiting; Infinity: never. */
    readonly due: number,
    readonly deadlineMs: number | undefined,
    readonly resolve: () => void,
    readonly reject: (error: unknown) => void,
  ) {}
}

/** A batch's item for the store: a plain object (the store's contract), made by a constructor for the same reason. */
const Item = plainConstructor(function (this: CompletionItem, lease: LeaseRef, result: unknown, logs: CompletionItem['logs'] | undefined) {
  this.lease = lease;
  if (result !== undefined) this.result = result;
  if (logs !== undefined) this.logs = logs;
});

/**
 * Group commit of completions, just below {@link RunLease}: each run's fenced completion goes
 * through here, and while one `store.completeMany` is in flight the completions arriving meanwhile
 * wait and go together in the next one. The completions of one turn of the event loop go together
 * too, sent at the end of that turn (`setImmediate`: no timer, no clock time): the runs of one
 * claim end in the same turn, and sending the first of them alone split them into a batch of one
 * and the rest, which the worker pool's next claims followed (a claim of one job, then one of the
 * rest; on MongoDB with flow limits, each claim of one costs a permit of its own).
 *
 * To each caller it looks like a single `store.complete`: it resolves once its job's completion is
 * committed, and rejects with `LeaseLostError` (the lease was taken over: nothing changed),
 * `CancelledError` (the job's cancel was requested), the store's error for that job alone, or the
 * batch's error. The lease's write loop (budget, retries) treats those exactly as before.
 *
 * Each caller gives its own deadline (the budget of its lease), and gets a `StoreTimeoutError` at
 * that instant if its completion is not committed by then, as `withDeadline` would give it. The
 * callers share one timer, armed for the earliest deadline pending: a timer per completion was a
 * measurable part of a no-op job's CPU on a MemoryStore (bench/README.md, "MemoryStore").
 *
 * A batch is waited for at most one lease: a store that hangs on one `completeMany` must not hold
 * every later completion of the engine behind it (each caller has given up by then anyway).
 */
export class CompletionBatch {
  private waiting: Waiting[] = [];
  private inFlight: Waiting[] = [];
  private writing = false;
  /** The write of the completions this turn of the event loop gathered. */
  private readonly writeAfterThisTurn = onceAfterThisTurn(() => {
    if (!this.writing) this.write();
  });
  /** The instant the deadline timer is armed for (Infinity: not armed), and its cancel. */
  private timerDue = Infinity;
  private cancelTimer: (() => void) | undefined;

  constructor(private readonly deps: { store: JobStore; clock: Clock; leaseMs: number }) {}

  /**
   * Completes the job of `lease` with `result` (fenced), appending the run's last `logs` in the
   * same write; resolves once committed. Rejects with a
   * `StoreTimeoutError` once `deadlineMs` of the clock's time passed without an answer, if given.
   */
  complete(lease: LeaseRef, result: unknown, deadlineMs?: number, logs?: CompletionItem['logs']): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const due = deadlineMs === undefined ? Infinity : nowMs(this.deps.clock) + deadlineMs;
      this.waiting.push(new Waiting(new Item(lease, result, logs), due, deadlineMs, resolve, reject));
      if (due < this.timerDue) this.armTimer(due);
      if (!this.writing) this.writeAfterThisTurn();
    });
  }

  private write(): void {
    // A completion whose caller gave up is sent all the same: fenced, it counts if it lands, as a
    // late `store.complete` would.
    const batch = this.waiting;
    if (batch.length === 0) return;
    this.waiting = [];
    this.inFlight = batch;
    this.writing = true;
    let outcomes: Promise<CompletionOutcome[]>;
    try {
      outcomes = this.deps.store.completeMany(
        mapPacked(batch, (w) => w.item),
        this.deps.clock.now(),
      );
    } catch (err) {
      outcomes = Promise.reject(err);
    }
    withDeadline(this.deps.clock, 'completeMany', this.deps.leaseMs, outcomes)
      .then(
        (results) => batch.forEach((w, i) => settle(w, results[i])),
        (err: unknown) => batch.forEach((w) => fail(w, err)),
      )
      .finally(() => {
        this.inFlight = [];
        this.writing = false;
        this.write();
        if (this.waiting.length === 0 && this.inFlight.length === 0) this.disarmTimer();
      });
  }

  private armTimer(due: number): void {
    this.cancelTimer?.();
    this.timerDue = due;
    this.cancelTimer = this.deps.clock.setTimer(() => this.timedOut(), Math.max(0, due - this.deps.clock.now().getTime()));
  }

  private disarmTimer(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.timerDue = Infinity;
  }

  /** The timer fired: every caller whose deadline has come gives up; the timer moves to the next deadline. */
  private timedOut(): void {
    this.cancelTimer = undefined;
    this.timerDue = Infinity;
    const now = this.deps.clock.now().getTime();
    let next = Infinity;
    for (const list of [this.inFlight, this.waiting]) {
      for (const w of list) {
        if (w.settled) continue;
        if (w.due <= now) fail(w, new StoreTimeoutError('complete', w.deadlineMs!));
        else next = Math.min(next, w.due);
      }
    }
    if (next < Infinity) this.armTimer(next);
  }
}

function settle(w: Waiting, outcome: CompletionOutcome | undefined): void {
  if (w.settled) return;
  w.settled = true;
  const { jobId } = w.item.lease;
  if (outcome === 'completed') w.resolve();
  else if (outcome === 'lost') w.reject(new LeaseLostError(jobId));
  else if (outcome === 'cancelled')
    w.reject(new CancelledError(jobId, undefined, 'its cancel was requested, so its completion was refused and nothing changed; the run ends cancelled'));
  else if (outcome === undefined) w.reject(new Error(`the store answered completeMany without an outcome for job ${jobId}`));
  else w.reject(outcome.error);
}

function fail(w: Waiting, error: unknown): void {
  if (w.settled) return;
  w.settled = true;
  w.reject(error);
}
