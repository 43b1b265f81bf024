import type { StepRecord } from '../job-record.js';
import { ChildFailedError, WaitTimeoutError } from './workflow-errors.js';

/**
 * Replays a completed wait or signal step: its result, or the memoized failure rebuilt as the
 * error the first run threw (same class, code and message), so every attempt sees one outcome.
 */
export function replayOutcome(step: StepRecord): unknown {
  const { error } = step;
  if (!error) return step.result;
  if (error.code === 'CHILD_FAILED') {
    const childId = (step.result as { failedChild?: unknown } | undefined)?.failedChild;
    throw new ChildFailedError(step.name, typeof childId === 'string' ? childId : '', error.message);
  }
  throw new WaitTimeoutError(step.name, error.message);
}
