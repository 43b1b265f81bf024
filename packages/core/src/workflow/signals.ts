import type { Clock } from '../support/clock.js';
import { InvalidArgumentError, WaitTimeoutError } from '../support/errors.js';
import type { StepRecord } from '../store/job-record.js';
import type { JobStore } from '../store/store.js';
import { RunSuspension } from './run-suspension.js';
import { toErrorRecord } from '../jobs/error-record.js';
import type { RunScope } from './run-scope.js';
import { replayOutcome } from './step-outcome.js';
import { checkStepValue } from './step-limits.js';
import { waitDeadline } from './wait-deadline.js';
import type { SignalOptions, WaitForSignalOptions } from '../jobs/workflow-options.js';

function requireName(what: string, name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '') throw new InvalidArgumentError(what, 'must be a non-empty string');
  return name;
}

/**
 * `loom.signal`: stores a signal on a job that has not finished and wakes it if it waits for that
 * name. `data` must be plain data under `MAX_STEP_RESULT_BYTES` (it becomes a step result); a bad
 * argument is refused and nothing is stored. Returns false when the job does not exist or finished.
 * A job holding `MAX_PENDING_SIGNALS` untaken signals refuses more (`TOO_MANY_SIGNALS`).
 */
export async function sendSignal(
  deps: { store: JobStore; clock: Clock; onDelivered: () => void },
  jobId: string,
  name: string,
  data: unknown,
  options: SignalOptions = {},
): Promise<boolean> {
  requireName('signal job id', jobId);
  requireName('signal name', name);
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('signal options', 'must be an object');
  const { id } = options;
  if (id !== undefined) requireName('signal id', id);
  checkStepValue(`The data of signal "${name}"`, `waitForSignal:${name}`, data);
  const delivered = await deps.store.signal(jobId, { name, data, now: deps.clock.now(), ...(id === undefined ? {} : { id }) });
  if (delivered) deps.onDelivered();
  return delivered;
}

/**
 * `ctx.waitForSignal`: returns the data of the oldest stored signal `name`, taking it off the job
 * and recording it as a `signal` step in one store operation (so each signal is delivered to the
 * run exactly once, and replays get the same data). Without one, the run parks until it arrives
 * or the timeout passes (`WAIT_TIMEOUT`; see `WaitOutcomes` for when it is final).
 */
export async function waitForSignal(run: RunScope, signal: string, opts: WaitForSignalOptions = {}): Promise<unknown> {
  requireName('ctx.waitForSignal name', signal);
  if (typeof opts !== 'object' || opts === null) throw new InvalidArgumentError('ctx.waitForSignal options', 'must be an object');
  const name = opts.step ?? run.steps.nextName(`waitForSignal:${signal}`);
  const recorded = run.reach(name, 'signal');
  if (recorded?.status === 'completed') return replayOutcome(recorded);
  await run.moveOn();
  const now = run.clock.now();
  const deadline = waitDeadline(`ctx.waitForSignal("${signal}")`, opts.timeout, recorded, now);
  const consumed = await run.store.consumeSignal(run.lease, { signal, stepName: name, now });
  if (consumed) return replayOutcome(consumed);
  if (deadline && deadline.getTime() <= now.getTime()) {
    const error = new WaitTimeoutError(name, `Job ${run.jobId}: ${name} timed out at ${deadline.toISOString()} without receiving signal "${signal}"`);
    return run.outcomes.settle({ name, kind: 'signal', status: 'completed', error: toErrorRecord(error, run.attempt, now), at: now, wakeAt: deadline });
  }
  const pending: StepRecord | undefined = recorded ? undefined : { name, kind: 'signal', status: 'pending', at: now };
  if (pending && deadline) pending.wakeAt = deadline;
  const { store } = run;
  return run.suspend(
    new RunSuspension(
      `${name} for signal "${signal}"`,
      async (lease, when) => {
        const waited = await store.wait(lease, {
          for: { signal },
          now: when,
          ...(deadline ? { timeoutAt: deadline } : {}),
          ...(pending ? { step: run.steps.stamp(pending) } : {}),
        });
        // It arrived after consumeSignal looked: hand the job back at once, the next run takes it.
        if (waited === 'signal-pending') await store.release(lease, when);
      },
      deadline,
    ),
  );
}
