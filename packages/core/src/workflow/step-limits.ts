import { NotPlainDataError } from '../engine-errors.js';
import { findPlainDataProblem } from '../plain-data.js';
import { StepResultTooLargeError } from './workflow-errors.js';

/**
 * The largest value a workflow step may store, as estimated BSON: 1 MiB. It covers `ctx.step`
 * results, signal data and the fan-in of `ctx.waitForJob`. A job document holds all its steps, so
 * the cap keeps even a long workflow far below MongoDB's 16 MiB document limit.
 */
export const MAX_STEP_RESULT_BYTES = 1024 * 1024;

/**
 * Refuses what a step cannot store: anything but plain data (`NOT_PLAIN_DATA`, naming the path)
 * and values over {@link MAX_STEP_RESULT_BYTES} (`STEP_RESULT_TOO_LARGE`, naming the step).
 * `what` names the value in messages, e.g. `The result of step "charge"`.
 */
export function checkStepValue(what: string, stepName: string, value: unknown): void {
  if (value === undefined) return;
  const problem = findPlainDataProblem(value, Number.POSITIVE_INFINITY);
  if (problem) throw new NotPlainDataError(what, problem.path, problem.reason);
  const size = findPlainDataProblem(value, MAX_STEP_RESULT_BYTES);
  if (size) throw new StepResultTooLargeError(stepName, `${what} ${size.reason.replace(/;.*$/, '')} (MAX_STEP_RESULT_BYTES)`);
}
