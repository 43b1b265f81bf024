import { NonDeterminismError } from '../support/engine-errors.js';
import { LoomError } from '../support/errors.js';
import type { StepKind } from '../store/job-record.js';

/** A step as the determinism check reports it. */
export interface StepRef {
  name: string;
  kind: StepKind;
}

/**
 * A replay reached its steps in another order than the recorded history: the handler's code (or
 * the data it branches on outside steps) changed between attempts. It is a {@link NonDeterminismError}
 * (code `NON_DETERMINISM`) that names the recorded and the reached step.
 */
export class StepOrderError extends NonDeterminismError {
  constructor(jobId: string, position: number, expected: StepRef | undefined, actual: StepRef, recordedAt?: number) {
    super(jobId, actual.name, expected?.kind ?? actual.kind, actual.kind);
    const where = `step #${position + 1}`;
    this.message = expected
      ? `Job ${jobId}: replay diverged at ${where}: the history recorded ${describe(expected)} there, but this run reached ${describe(actual)}; ` +
        'a handler must reach its steps in the same order on every attempt (keep branching on step results, never on time or randomness outside steps)'
      : `Job ${jobId}: replay diverged: this run reached ${describe(actual)} as ${where}, but the history recorded it as step #${(recordedAt ?? 0) + 1}; ` +
        'a handler must reach its steps in the same order on every attempt';
  }
}

function describe(step: StepRef): string {
  return `${step.kind} "${step.name}"`;
}

/** A step result (or signal data, or fan-in of child results) is over {@link MAX_STEP_RESULT_BYTES}. */
export class StepResultTooLargeError extends LoomError {
  constructor(readonly stepName: string, detail: string) {
    super('STEP_RESULT_TOO_LARGE', `${detail}; store large data elsewhere (a bucket, a collection) and return a reference from step "${stepName}"`);
  }
}

/**
 * `ctx.waitForJob` or `ctx.waitForSignal` reached its timeout. Once a handler catches it and goes
 * on, it is final: later attempts get the same error at the same step and take the same path.
 */
export class WaitTimeoutError extends LoomError {
  constructor(readonly stepName: string, message: string) {
    super('WAIT_TIMEOUT', message);
  }
}

/**
 * A job awaited with `ctx.waitForJob` is dead (it failed permanently or ran out of attempts). Catch
 * it to compensate (final from then on), or let it fail the parent's attempt (the next attempt
 * looks again, so replaying the dead child and then the parent can still succeed).
 */
export class ChildFailedError extends LoomError {
  constructor(readonly stepName: string, readonly childId: string, message: string) {
    super('CHILD_FAILED', message);
  }
}

/**
 * A job awaited with `ctx.waitForJob` was cancelled (`loom.jobs.cancel`). Like {@link ChildFailedError}:
 * catch it to go on without the child (final from then on), or let it fail the parent's attempt.
 */
export class ChildCancelledError extends LoomError {
  constructor(readonly stepName: string, readonly childId: string, message: string) {
    super('CHILD_CANCELLED', message);
  }
}
