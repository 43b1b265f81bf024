import type { Clock } from '../support/clock.js';
import { CancelledError, LeaseLostError } from '../support/errors.js';
import type { LeaseRef } from '../store/job-record.js';
import type { CompletionItem, CompletionOutcome, JobStore } from '../store/store.js';
import { withDeadline } from './store-deadline.js';

interface Waiting {
  item: CompletionItem;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit of completions, just below {@link RunLease}: each run's fenced completion goes
 * through here, and while one `store.completeMany` is in flight the completions arriving meanwhile
 * wait and go together in the next one. A lone completion is sent at once (no timer, no added
 * latency); under load, a batch forms while the previous one is written.
 *
 * To each caller it looks like a single `store.complete`: it resolves once its job's completion is
 * committed, and rejects with `LeaseLostError` (the lease was taken over: nothing changed),
 * `CancelledError` (the job's cancel was requested), the store's error for that job alone, or the
 * batch's error. The lease's write loop (budget, retries) treats those exactly as before.
 *
 * A batch is waited for at most one lease: a store that hangs on one `completeMany` must not hold
 * every later completion of the engine behind it (each caller has given up by then anyway).
 */
export class CompletionBatch {
  private waiting: Waiting[] = [];
  private writing = false;

  constructor(private readonly deps: { store: JobStore; clock: Clock; leaseMs: number }) {}

  /** Completes the job of `lease` with `result` (fenced); resolves once committed. */
  complete(lease: LeaseRef, result: unknown): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ item: result === undefined ? { lease } : { lease, result }, resolve, reject });
      if (!this.writing) this.write();
    });
  }

  private write(): void {
    const batch = this.waiting;
    if (batch.length === 0) return;
    this.waiting = [];
    this.writing = true;
    let outcomes: Promise<CompletionOutcome[]>;
    try {
      outcomes = this.deps.store.completeMany(
        batch.map((w) => w.item),
        this.deps.clock.now(),
      );
    } catch (err) {
      outcomes = Promise.reject(err);
    }
    withDeadline(this.deps.clock, 'completeMany', this.deps.leaseMs, outcomes)
      .then(
        (results) => batch.forEach((w, i) => settle(w, results[i])),
        (err: unknown) => batch.forEach((w) => w.reject(err)),
      )
      .finally(() => {
        this.writing = false;
        this.write();
      });
  }
}

function settle(w: Waiting, outcome: CompletionOutcome | undefined): void {
  const { jobId } = w.item.lease;
  if (outcome === 'completed') w.resolve();
  else if (outcome === 'lost') w.reject(new LeaseLostError(jobId));
  else if (outcome === 'cancelled') w.reject(new CancelledError(jobId, undefined, 'its cancel was requested, so its completion was refused and nothing changed; the run ends cancelled'));
  else if (outcome === undefined) w.reject(new Error(`the store answered completeMany without an outcome for job ${jobId}`));
  else w.reject(outcome.error);
}
