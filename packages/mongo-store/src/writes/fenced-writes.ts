import type { ClientSession, Collection, Document, ObjectId, UpdateFilter } from 'mongodb';
import { CancelledError, LeaseLostError, LoomError, type LeaseExtension, type LeaseRef, type StepRecord, type TransitionName } from '@loom/core';
import { parseJobId, requireDate, requireString } from '../arguments.js';
import { withSession } from '../connection/collections.js';
import type { JobDocument } from '../schema/documents.js';
import { fencedFilter, type FenceConditions, type FenceName } from '../schema/filters.js';
import { consumeSignalUpdate, pendingStepArrayFilters, touchUpdate, withStep } from '../schema/updates.js';
import { StoreArgumentError, tooManyRounds } from '../store-errors.js';

/** A conditional write that lost a race is retried this often before giving up loudly. */
export const MAX_CONDITIONAL_ROUNDS = 5;

/** The step of this name that a run completed (a pending sleep or wait does not count). */
function completedStep(job: JobDocument, name: string): StepRecord | undefined {
  return job.steps.find((s) => s.name === name && s.status === 'completed');
}

/** See {@link FencedWrites.refusal}. */
export async function fenceRefusal(jobs: Collection<JobDocument>, id: ObjectId, lease: LeaseRef, session?: ClientSession): Promise<LoomError> {
  const job = await jobs.findOne(fencedFilter('holds', id, lease.token), { projection: { cancelRequestedAt: 1, cancelReason: 1 }, ...withSession(session) });
  if (job?.cancelRequestedAt === undefined) return new LeaseLostError(lease.jobId);
  return new CancelledError(lease.jobId, job.cancelReason, 'its cancel was requested, so this write was refused and nothing changed; the run ends cancelled');
}

/**
 * Every write after a claim, fenced as its row of `LIFECYCLE` says ({@link fencedFilter}): zero
 * matches means the lease was lost (or a condition failed) and nothing changed. Steps are
 * first-completed-write-wins: appended when new, replacing a `pending` one of the same name, left
 * alone when completed.
 */
export class FencedWrites {
  constructor(private readonly jobs: Collection<JobDocument>) {}

  /** The job id of a lease; an id that cannot be ours means no such job holds this lease. */
  jobIdOf(lease: LeaseRef): ObjectId {
    if (typeof lease !== 'object' || lease === null) throw new StoreArgumentError('lease must be { jobId, token }');
    requireString(lease.token, 'lease token');
    const id = parseJobId(lease.jobId, 'lease jobId');
    if (!id) throw new LeaseLostError(String(lease.jobId), 'no job has this id');
    return id;
  }

  /** A fenced write of the transition `name`; false when the fence (or a condition) did not match. */
  async tryWrite(
    name: TransitionName,
    lease: LeaseRef,
    update: UpdateFilter<JobDocument>,
    conditions: FenceConditions = {},
    session?: ClientSession,
    arrayFilters?: Document[],
  ): Promise<boolean> {
    const id = this.jobIdOf(lease);
    const options = { ...withSession(session), ...(arrayFilters ? { arrayFilters } : {}) };
    const res = await this.jobs.updateOne(fencedFilter(name, id, lease.token, conditions), update, options);
    return res.matchedCount === 1;
  }

  /** A fenced write that must apply: zero matches is a lost lease (or a requested cancel, see {@link refusal}). */
  async write(name: TransitionName, lease: LeaseRef, update: UpdateFilter<JobDocument>, session?: ClientSession): Promise<void> {
    if (!(await this.tryWrite(name, lease, update, {}, session))) throw await this.refusal(lease, session);
  }

  /**
   * A lease extension at `now`: works after a cancel request too, and says whether one was made. A
   * lease that ran out before `now` is lost, taken over or not (see {@link FenceConditions.unexpiredAt}).
   */
  async extend(lease: LeaseRef, update: UpdateFilter<JobDocument>, now: Date): Promise<LeaseExtension> {
    const filter = fencedFilter('extendLease', this.jobIdOf(lease), lease.token, { unexpiredAt: now });
    const before = await this.jobs.findOneAndUpdate(filter, update, { projection: { cancelRequestedAt: 1 } });
    if (!before) throw new LeaseLostError(lease.jobId);
    return before.cancelRequestedAt === undefined ? 'extended' : 'cancel-requested';
  }

  /** Whether the job is still running under this lease (one read by id). */
  async holds(lease: LeaseRef): Promise<boolean> {
    return (await this.jobs.countDocuments(fencedFilter('holds', this.jobIdOf(lease), lease.token), { limit: 1 })) === 1;
  }

  /** The job, if this lease still holds it for the transition `name`; LeaseLostError (or CancelledError) otherwise. */
  async owned(name: FenceName, lease: LeaseRef): Promise<JobDocument> {
    const job = await this.jobs.findOne(fencedFilter(name, this.jobIdOf(lease), lease.token));
    if (!job) throw await this.refusal(lease);
    return job;
  }

  /**
   * Why a fenced write matched nothing: the lease still holds but the job's cancel was requested (a
   * `CancelledError`: the holder must end it cancelled), or the lease is lost. One read, only on
   * this failure path.
   */
  refusal(lease: LeaseRef, session?: ClientSession): Promise<LoomError> {
    return fenceRefusal(this.jobs, this.jobIdOf(lease), lease, session);
  }

  /**
   * A fenced transition that may carry a step. Returns 'refused' when `refuse(job)` explains why
   * the conditions failed (e.g. the awaited signal is already there).
   */
  async transition(
    name: TransitionName,
    lease: LeaseRef,
    update: UpdateFilter<JobDocument>,
    step: StepRecord | undefined,
    conditions: FenceConditions = {},
    refuse: (job: JobDocument) => boolean = () => false,
  ): Promise<'done' | 'refused'> {
    let pendingStep = step;
    for (let round = 0; round < MAX_CONDITIONAL_ROUNDS; round++) {
      const written = pendingStep
        ? await this.tryWriteWithStep(name, lease, update, pendingStep, conditions)
        : await this.tryWrite(name, lease, update, conditions);
      if (written) return 'done';
      const job = await this.owned(name, lease);
      if (refuse(job)) return 'refused';
      // The step was completed by an earlier attempt: keep it, make the transition alone.
      if (pendingStep && completedStep(job, pendingStep.name)) pendingStep = undefined;
    }
    throw tooManyRounds(name, lease.jobId);
  }

  /** Records a step; returns the stored one (the earlier completed step, if there is one). */
  async recordStep(lease: LeaseRef, step: StepRecord, now: Date): Promise<StepRecord> {
    requireString(step?.name, 'step name');
    const update = touchUpdate(requireDate(now, 'now'));
    for (let round = 0; round < MAX_CONDITIONAL_ROUNDS; round++) {
      if (await this.tryWriteWithStep('recordStep', lease, update, step)) return step;
      const existing = completedStep(await this.owned('recordStep', lease), step.name);
      if (existing) return existing;
    }
    throw tooManyRounds('recordStep', lease.jobId);
  }

  /** Takes the oldest stored signal `signal` off the job as the completed step `stepName`. */
  async consumeSignal(lease: LeaseRef, req: { signal: string; stepName: string; now: Date }): Promise<StepRecord | null> {
    const now = requireDate(req?.now, 'now');
    const name = requireString(req.signal, 'signal name');
    const stepName = requireString(req.stepName, 'step name');
    for (let round = 0; round < MAX_CONDITIONAL_ROUNDS; round++) {
      const job = await this.owned('consumeSignal', lease);
      const recorded = completedStep(job, stepName);
      if (recorded) return recorded; // consumed by an earlier attempt: replay it, consume nothing
      const stored = job.signals.find((s) => s.name === name);
      if (!stored) return null;
      const step: StepRecord = { name: stepName, kind: 'signal', status: 'completed', result: stored.data, at: now };
      if (stored.id !== undefined) step.signalId = stored.id;
      if (await this.tryWriteWithStep('consumeSignal', lease, consumeSignalUpdate(stored.sid, now), step, { signalId: stored.sid })) return step;
    }
    throw tooManyRounds('consumeSignal', lease.jobId);
  }

  /** Writes `update` plus `step` (appended, or replacing a pending one); false when nothing matched. */
  private async tryWriteWithStep(
    name: TransitionName,
    lease: LeaseRef,
    update: UpdateFilter<JobDocument>,
    step: StepRecord,
    conditions: FenceConditions = {},
  ): Promise<boolean> {
    if (await this.tryWrite(name, lease, withStep(update, step, 'append'), { ...conditions, absentStep: step.name })) return true;
    const replace = withStep(update, step, 'replace-pending');
    return this.tryWrite(name, lease, replace, { ...conditions, pendingStep: step.name }, undefined, pendingStepArrayFilters(step.name));
  }
}
