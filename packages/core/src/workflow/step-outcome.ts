import type { StepRecord } from '../store/job-record.js';
import { ChildCancelledError, ChildFailedError, WaitTimeoutError } from '../support/errors.js';

/**
 * Replays a wait or signal step: its result, or its failure rebuilt as the error the first run
 * threw (same class, code and message).
 */
export function replayOutcome(step: StepRecord): unknown {
  const { error } = step;
  if (!error) return step.result;
  if (error.code === 'CHILD_FAILED' || error.code === 'CHILD_CANCELLED') {
    const childId = (step.result as { failedChild?: unknown } | undefined)?.failedChild;
    const id = typeof childId === 'string' ? childId : '';
    throw error.code === 'CHILD_FAILED' ? new ChildFailedError(step.name, id, error.message) : new ChildCancelledError(step.name, id, error.message);
  }
  throw new WaitTimeoutError(step.name, error.message);
}

/**
 * Records the outcomes of waits (`waitForJob`, `waitForSignal`). A result is final at once. A
 * failure (`CHILD_FAILED`, `WAIT_TIMEOUT`) is recorded `pending` with its error and thrown:
 * - if the handler lets it fail the attempt, the next attempt (or a replay from the dead letters,
 *   after an operator replayed the dead child) looks again instead of failing forever;
 * - if the handler catches it and goes on to another step (or returns), {@link WaitOutcomes.moveOn}
 *   makes it final first, so every later attempt takes the same path (a late signal or a replayed
 *   child cannot rewrite a history the handler already acted on).
 */
export class WaitOutcomes {
  private readonly caught: StepRecord[] = [];

  constructor(private readonly record: (step: StepRecord) => Promise<StepRecord>) {}

  /** Records `outcome` (a `completed` step, with `error` for a failure) and returns or throws it. */
  async settle(outcome: StepRecord): Promise<unknown> {
    if (!outcome.error) return replayOutcome(await this.record(outcome));
    const stored = await this.record({ ...outcome, status: 'pending' });
    if (stored.status === 'pending') this.caught.push(stored);
    return replayOutcome(stored);
  }

  /** Called when the run reaches its next step or returns: failures thrown so far were caught, so they become final. */
  async moveOn(): Promise<void> {
    for (let step = this.caught.shift(); step; step = this.caught.shift()) await this.record({ ...step, status: 'completed' });
  }

  get pending(): boolean {
    return this.caught.length > 0;
  }
}
