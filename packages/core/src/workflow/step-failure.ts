import type { StepKind } from '../store/job-record.js';
import { RunSuspension } from './run-suspension.js';
import { toError } from '../support/to-error.js';
import { toErrorRecord } from '../jobs/error-record.js';
import type { RunScope } from './run-scope.js';

/**
 * Records a failed step as `pending` with its error, so `loom.getJob` shows where a workflow is
 * stuck; the next attempt runs the step again and its result replaces the record. Best effort: a
 * refused write (lost lease, store down) is logged and the step's own error still fails the attempt.
 */
export async function recordStepFailure(run: RunScope, name: string, kind: StepKind, thrown: unknown): Promise<void> {
  if (thrown instanceof RunSuspension) return;
  const now = run.clock.now();
  try {
    await run.record({ name, kind, status: 'pending', error: toErrorRecord(toError(thrown), run.attempt, now), at: now });
  } catch (err) {
    run.log.warn({ err, jobId: run.jobId }, `Job ${run.jobId}: could not record the failure of step "${name}" on the job; the attempt fails all the same`);
  }
}
