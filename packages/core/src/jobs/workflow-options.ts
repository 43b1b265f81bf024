import type { Duration } from '../support/duration.js';
import type { EnqueueOptions } from '../store/enqueue-options.js';

/** Options of `ctx.enqueue`: those of `loom.enqueue` (no `session`) plus the step name. */
export interface ChildEnqueueOptions extends Omit<EnqueueOptions, 'session'> {
  /**
   * The step that memoizes this enqueue. Default: `enqueue:<job name>#<n>`, where n counts this
   * run's enqueues of that job from 1 (stable as long as the handler enqueues in the same order).
   */
  step?: string;
}

/** Options of `ctx.waitForJob`. */
export interface WaitForJobOptions {
  /** Give up after this long (from the first time the run reached the wait): `WAIT_TIMEOUT`. Default: no timeout. */
  timeout?: Duration;
  /** The step that memoizes the outcome. Default: `waitForJob#<n>` (n counts this run's waits for jobs from 1). */
  step?: string;
}

/** Options of `ctx.waitForSignal`. */
export interface WaitForSignalOptions {
  /** Give up after this long (from the first time the run reached the wait): `WAIT_TIMEOUT`. Default: no timeout. */
  timeout?: Duration;
  /** The step that records the signal. Default: `waitForSignal:<name>#<n>` (n counts this run's waits for that signal from 1). */
  step?: string;
}

/** Options of `loom.signal`. */
export interface SignalOptions {
  /**
   * Makes the signal idempotent: a signal with this id already stored on the job, or already
   * taken by one of its runs, is not stored again (`loom.signal` resolves true). Use it when a
   * send may be retried, e.g. an HTTP handler forwarding a webhook with its delivery id.
   */
  id?: string;
}
