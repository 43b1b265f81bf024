import type { Duration } from '../support/duration.js';
import type { DependencyFailurePolicy } from './job-record.js';

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
  /**
   * Ids of jobs (as returned by `enqueue`) this one runs after: it waits, `waiting` with
   * `waitingFor.dependencies`, until every one has completed, then becomes due. Its run reads their
   * results with `ctx.dependencyResults()`. An id that does not exist is refused with an
   * `InvalidDependenciesError` (`INVALID_DEPENDENCIES`), nothing stored. Not with a debounced job.
   */
  dependsOn?: readonly string[];
  /**
   * With `dependsOn`: what a dependency that dies or is cancelled does to this job. `'fail'`
   * (default): dead-lettered with `DEPENDENCY_FAILED`; `'cancel'`: cancelled; `'run'`: it runs anyway
   * once the others have ended.
   */
  onDependencyFailure?: DependencyFailurePolicy;
}
