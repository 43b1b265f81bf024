import { ChildCancelledError, ChildFailedError, InvalidArgumentError, WaitTimeoutError } from '../support/errors.js';
import type { JobClass } from '../jobs/job-class.js';
import type { EnqueueResult, JobRecord, StepRecord } from '../store/job-record.js';
import { RunSuspension } from './run-suspension.js';
import { toErrorRecord } from '../jobs/error-record.js';
import { jobWaitRecheckAt, wakeIfJobsFinished } from './parent-wake.js';
import type { RunScope } from './run-scope.js';
import { replayOutcome } from './step-outcome.js';
import { waitDeadline } from './wait-deadline.js';
import type { ChildEnqueueOptions, WaitForJobOptions } from '../jobs/workflow-options.js';

/**
 * The idempotency key a child gets when neither the call nor its job defines one: unique per
 * parent and step, so a retried parent that crashed between enqueueing and recording the step
 * finds its child again instead of enqueueing a second one.
 */
export function childIdempotencyKey(parentId: string, stepName: string): string {
  return `child:${parentId}:${stepName}`;
}

/**
 * `ctx.enqueue`: enqueues a child job (`parentId` = this job) once per parent and step. The outcome
 * (`{ id, deduplicated }`) is memoized as an `enqueue` step; replays return it without touching
 * the queue. Key: `opts.idempotencyKey`, else the child job's own `idempotencyKey(payload)`, else
 * {@link childIdempotencyKey}.
 */
export async function enqueueChild(run: RunScope, jobClass: JobClass, payload: unknown, opts: ChildEnqueueOptions = {}): Promise<EnqueueResult> {
  if (typeof opts !== 'object' || opts === null) throw new InvalidArgumentError('ctx.enqueue options', 'must be an object');
  if ((opts as { session?: unknown }).session !== undefined) {
    throw new InvalidArgumentError(
      'ctx.enqueue options',
      'a child enqueue cannot take a session: it is memoized as a step of its own, outside the transaction',
    );
  }
  const def = run.services.registry.byClass(jobClass);
  const { step, ...enqueueOptions } = opts;
  const name = step ?? run.steps.nextName(`enqueue:${def.name}`);
  const recorded = run.reach(name, 'enqueue');
  if (recorded?.status === 'completed') return recorded.result as EnqueueResult;
  await run.moveOn();
  const idempotencyKey = enqueueOptions.idempotencyKey ?? (def.idempotencyKey ? undefined : childIdempotencyKey(run.jobId, name));
  const { id, deduplicated } = await run.services.enqueuer.enqueueDefinition(
    def,
    payload,
    idempotencyKey === undefined ? enqueueOptions : { ...enqueueOptions, idempotencyKey },
    { parentId: run.jobId },
  );
  const stored = await run.record({ name, kind: 'enqueue', status: 'completed', result: { id, deduplicated }, at: run.clock.now() });
  return stored.result as EnqueueResult;
}

/**
 * `ctx.waitForJob`: returns the results of `ids` once all have completed (one result for a string,
 * an array in input order for an array; a job without a result gives `undefined` alone, `null` in
 * an array). Until then the run parks (`store.wait`) and is woken when they finish. A dead job
 * fails the wait with `CHILD_FAILED`, a cancelled one with `CHILD_CANCELLED`, the timeout with `WAIT_TIMEOUT`. The outcome is recorded as
 * a `wait` step (see `WaitOutcomes` for when a failure is final).
 */
export async function waitForJobs(run: RunScope, ids: string | readonly string[], opts: WaitForJobOptions = {}): Promise<unknown> {
  const single = typeof ids === 'string';
  const list = single ? [ids] : ids;
  if (!Array.isArray(list) || list.length === 0 || !list.every((id) => typeof id === 'string' && id !== '')) {
    throw new InvalidArgumentError('ctx.waitForJob ids', 'give a job id or a non-empty array of job ids (as returned by ctx.enqueue)');
  }
  if (typeof opts !== 'object' || opts === null) throw new InvalidArgumentError('ctx.waitForJob options', 'must be an object');
  const name = opts.step ?? run.steps.nextName('waitForJob');
  const recorded = run.reach(name, 'wait');
  if (recorded?.status === 'completed') return replayOutcome(recorded);
  await run.moveOn();
  const now = run.clock.now();
  const deadline = waitDeadline(`ctx.waitForJob("${name}")`, opts.timeout, recorded, now);
  const jobs = await Promise.all(list.map((id: string) => run.store.getJob(id)));
  const outcome = settledOutcome(run, name, list, jobs, single, now);
  if (outcome && deadline) outcome.wakeAt = deadline; // a failure stays pending: keep its deadline for the next look
  if (outcome) return run.outcomes.settle(outcome);
  if (deadline && deadline.getTime() <= now.getTime()) {
    const error = new WaitTimeoutError(
      name,
      `Job ${run.jobId}: ${name} timed out at ${deadline.toISOString()} waiting for job(s) ${unfinishedIds(jobs).join(', ')}`,
    );
    return run.outcomes.settle({
      name,
      kind: 'wait',
      status: 'completed',
      error: toErrorRecord(error, run.attempt, now),
      at: now,
      ...(deadline ? { wakeAt: deadline } : {}),
    });
  }
  const unfinished = unfinishedIds(jobs);
  // The wait began when its step was first recorded (pending); this is its first park otherwise.
  const recheckAt = jobWaitRecheckAt(recorded?.at ?? now, now);
  const timeoutAt = deadline && deadline < recheckAt ? deadline : recheckAt;
  const pending: StepRecord | undefined = recorded ? undefined : { name, kind: 'wait', status: 'pending', at: now };
  if (pending && deadline) pending.wakeAt = deadline;
  const { store, clock, log, services } = run;
  return run.suspend(
    new RunSuspension(
      `${name} for ${unfinished.length} job(s)`,
      async (lease, when) => {
        await store.wait(lease, { for: { jobs: unfinished }, timeoutAt, now: when, ...(pending ? { step: run.steps.stamp(pending) } : {}) });
        // The jobs may have finished between the read above and the wait: their wake found this job still running.
        try {
          await wakeIfJobsFinished({ store, clock, onWoken: services.wakeWorkers }, run.jobId);
        } catch (err) {
          log.error(
            { err, jobId: run.jobId },
            `Job ${run.jobId}: re-checking its awaited jobs after parking failed; it looks again at ${timeoutAt.toISOString()}`,
          );
        }
      },
      deadline,
    ),
  );
}

/** The completed `wait` step when every job finished (its results) or one is dead (its failure); else null. */
function settledOutcome(run: RunScope, name: string, ids: readonly string[], jobs: (JobRecord | null)[], single: boolean, now: Date): StepRecord | null {
  const missing = ids.find((_, i) => jobs[i] === null);
  if (missing !== undefined) {
    throw new InvalidArgumentError(`ctx.waitForJob("${name}")`, `no job has id ${missing} (it never existed, or retention removed it after it finished)`);
  }
  const cancelled = jobs.find((job) => job!.status === 'cancelled');
  if (cancelled) {
    const why = cancelled.cancelReason ? `: ${cancelled.cancelReason}` : '';
    const error = new ChildCancelledError(name, cancelled.id, `Job ${run.jobId}: child job ${cancelled.id} (${cancelled.name}) was cancelled${why}`);
    return { name, kind: 'wait', status: 'completed', result: { failedChild: cancelled.id }, error: toErrorRecord(error, run.attempt, now), at: now };
  }
  const dead = jobs.find((job) => job!.status === 'dead');
  if (dead) {
    const cause = dead.errors.at(-1);
    const why = dead.deadReason ?? cause?.message ?? 'no reason recorded';
    const last = cause ? ` (last error: ${cause.name}${cause.code ? ` [${cause.code}]` : ''})` : '';
    const error = new ChildFailedError(name, dead.id, `Job ${run.jobId}: child job ${dead.id} (${dead.name}) is dead: ${why}${last}`);
    return { name, kind: 'wait', status: 'completed', result: { failedChild: dead.id }, error: toErrorRecord(error, run.attempt, now), at: now };
  }
  if (!jobs.every((job) => job!.status === 'completed')) return null;
  const result = single ? jobs[0]!.result : jobs.map((job) => job!.result ?? null);
  run.budget.admit(`The results of the jobs awaited by "${name}"`, name, result);
  const step: StepRecord = { name, kind: 'wait', status: 'completed', at: now };
  if (result !== undefined) step.result = result;
  return step;
}

function unfinishedIds(jobs: (JobRecord | null)[]): string[] {
  return jobs.filter((job): job is JobRecord => job !== null && job.status !== 'completed').map((job) => job.id);
}
