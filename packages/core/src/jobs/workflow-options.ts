import type { z } from 'zod';
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

/** Options of `ctx.createWaitToken`. */
export interface CreateWaitTokenOptions<S extends z.ZodType = z.ZodType> {
  /** After this long the token can no longer be completed: the wait returns `default`, or throws `TokenTimeoutError`. Default: never. */
  timeout?: Duration;
  /**
   * The zod schema a completion's output must match (`INVALID_TOKEN_OUTPUT` otherwise, nothing
   * changes). It is stored with the token as JSON Schema, so any process can check it: a schema
   * JSON Schema cannot express (a transform, a refinement) is refused with `INVALID_ARGUMENT`.
   */
  schema?: S;
  /** What the wait returns when the token times out, instead of throwing `TokenTimeoutError`. */
  default?: z.output<S>;
}

/**
 * A wait token: give `id` (or `url`) to whoever decides, then `ctx.waitForToken(token)`. Plain
 * data, so the step that creates it stores it; `T` is the output the wait returns.
 */
export interface WaitToken<T = unknown> {
  id: string;
  /** A signed link to the token endpoint, when `Loom.create({ waitTokens })` configures one. */
  url?: string;
  /** When the token times out (ISO 8601), if it does. */
  timeoutAt?: string;
  /** Carries the output type only; never set. */
  readonly __output?: T;
}

/** Options of `ctx.waitForToken`. */
export interface WaitForTokenOptions {
  /** The step that records the outcome. Default: `waitForToken#<n>` (n counts this run's token waits from 1). */
  step?: string;
}
