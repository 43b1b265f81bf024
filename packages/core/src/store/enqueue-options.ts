import type { Duration } from '../support/duration.js';

/** Per-enqueue options. */
export interface EnqueueOptions {
  /** Run no sooner than this long from now. Exclusive with `runAt`. */
  delay?: Duration;
  /** Run no sooner than this instant. Exclusive with `delay`. */
  runAt?: Date;
  /** Overrides the job's `priority`: higher runs first. */
  priority?: number;
  /** Overrides the job's `idempotencyKey` function: a non-empty string of business identity. */
  idempotencyKey?: string;
  /** A session from `store.withTransaction`: the job is stored only if that transaction commits. */
  session?: unknown;
}
