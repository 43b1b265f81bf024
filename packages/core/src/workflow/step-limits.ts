import { NotPlainDataError, StepResultTooLargeError } from '../support/errors.js';
import type { StepRecord } from '../store/job-record.js';
import { findPlainDataProblem, plainDataSize } from '../support/plain-data.js';

/**
 * The largest value one workflow step may store, as estimated BSON: 1 MiB. It covers `ctx.step`
 * results, signal data and the fan-in of `ctx.waitForJob`.
 */
export const MAX_STEP_RESULT_BYTES = 1024 * 1024;

/**
 * The most all of one job's step results may hold together: 8 MiB. A job document carries its
 * steps, so this keeps a long workflow's document far below MongoDB's 16 MiB limit.
 */
export const MAX_STEP_RESULTS_TOTAL_BYTES = 8 * 1024 * 1024;

/**
 * Refuses what a step cannot store: anything but plain data (`NOT_PLAIN_DATA`, naming the path)
 * and values over {@link MAX_STEP_RESULT_BYTES} (`STEP_RESULT_TOO_LARGE`, naming the step).
 * `what` names the value in messages, e.g. `The result of step "charge"`. Returns its size.
 */
export function checkStepValue(what: string, stepName: string, value: unknown): number {
  if (value === undefined) return 0;
  const size = plainDataSize(value);
  if (size === null) {
    const problem = findPlainDataProblem(value, Number.POSITIVE_INFINITY)!;
    throw new NotPlainDataError(what, problem.path, problem.reason);
  }
  if (size > MAX_STEP_RESULT_BYTES) {
    throw new StepResultTooLargeError(
      stepName,
      `${what} is about ${size} bytes serialized, over the ${MAX_STEP_RESULT_BYTES}-byte limit of one step (MAX_STEP_RESULT_BYTES)`,
    );
  }
  return size;
}

/** One run's account of how much its job's step results hold, against {@link MAX_STEP_RESULTS_TOTAL_BYTES}. */
export class StepBudget {
  private used: number | undefined;
  /** Bytes of step results admitted during this run (the job's record grows by about this much). */
  added = 0;

  constructor(private readonly history: readonly StepRecord[]) {}

  /** {@link checkStepValue}, plus the job's total: a value that would pass it is refused, naming the step. */
  admit(what: string, stepName: string, value: unknown): void {
    const size = checkStepValue(what, stepName, value);
    if (size === 0) return;
    // Measured lazily: most runs replay steps and record few new results.
    this.used ??= this.history.reduce((sum, step) => sum + (step.status === 'completed' ? (plainDataSize(step.result) ?? 0) : 0), 0);
    if (this.used + size > MAX_STEP_RESULTS_TOTAL_BYTES) {
      throw new StepResultTooLargeError(
        stepName,
        `${what} is about ${size} bytes serialized; with the ${this.used} bytes this job's earlier steps hold, it would pass the ${MAX_STEP_RESULTS_TOTAL_BYTES}-byte total of one job (MAX_STEP_RESULTS_TOTAL_BYTES)`,
      );
    }
    this.used += size;
    this.added += size;
  }
}
