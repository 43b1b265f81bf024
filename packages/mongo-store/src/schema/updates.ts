import { ObjectId } from 'mongodb';
import type { Document, UpdateFilter } from 'mongodb';
import {
  DEFAULT_JOB_LOG_LINES,
  jobLogKeepProblem,
  jobLogProblem,
  LIFECYCLE,
  type ErrorRecord,
  type JobLogLine,
  type JobStatus,
  type NewJob,
  type StepRecord,
  type TransitionName,
  type WaitCondition,
} from '@loom/core';
import { requireDate, requireNumber, requireString, requireTraceContext } from '../arguments.js';
import type { DeadLetterDocument, JobDocument, StoredSignal, StoredValueRef } from './documents.js';
import { IdempotencyKeyError, StoreArgumentError } from '../store-errors.js';

/**
 * Pure builders of every document and update the store writes. Each transition keeps one
 * invariant: `claimAt` is set exactly while the job can become claimable (see JobDocument).
 */

/** The status a row of `LIFECYCLE` ends in, for a builder that writes it. */
function endStatus(name: TransitionName): JobStatus {
  const { to } = LIFECYCLE[name];
  if (to === 'removed' || to === 'unchanged') throw new Error(`LIFECYCLE.${name} sets no status`);
  return to;
}

/**
 * The status each builder writes: its row's `to` in `LIFECYCLE`, read once at load, so no builder
 * states a status of its own (claim, reclaim and the claim at a wait's timeout all end `running`;
 * a cancel, a cancel of an expired lease and the holder's end of a cancel all end `cancelled`).
 */
export const LIFECYCLE_TO = {
  enqueue: endStatus('enqueue'),
  claim: endStatus('claim'),
  complete: endStatus('complete'),
  retry: endStatus('retry'),
  sleep: endStatus('sleep'),
  release: endStatus('release'),
  wait: endStatus('wait'),
  wake: endStatus('wake'),
  signalWake: endStatus('signalWake'),
  deadLetter: endStatus('deadLetter'),
  replay: endStatus('replay'),
  cancel: endStatus('cancel'),
  retryJob: endStatus('retryJob'),
  runJobNow: endStatus('runJobNow'),
} as const;

/** How many failures a job keeps; older ones are dropped (the count is in `attempt`). */
export const MAX_ERROR_HISTORY = 25;

/** BSON dates have millisecond precision: a lease is expired from `until + 1 ms` on. */
export function leaseExpiredAt(until: Date): Date {
  return new Date(until.getTime() + 1);
}

/** The stored form of a new job. Throws INVALID_ARGUMENT on a malformed field; nothing is written then. */
export function newJobDocument(job: NewJob, now: Date, id = new ObjectId()): JobDocument {
  if (job.idempotencyKey !== undefined && (typeof job.idempotencyKey !== 'string' || job.idempotencyKey === '')) {
    const got = typeof job.idempotencyKey === 'string' ? 'an empty string' : typeof job.idempotencyKey;
    throw new IdempotencyKeyError(got);
  }
  const runAt = requireDate(job.runAt, 'job.runAt');
  const doc: JobDocument = {
    _id: id,
    name: requireString(job.name, 'job.name'),
    queue: requireString(job.queue, 'job.queue'),
    payload: job.payload,
    status: LIFECYCLE_TO.enqueue,
    priority: requireNumber(job.priority, 'job.priority'),
    runAt,
    claimAt: runAt,
    attempt: 0,
    maxAttempts: requireNumber(job.maxAttempts, 'job.maxAttempts', true),
    errors: [],
    steps: job.steps === undefined ? [] : requireSteps(job.steps),
    signals: [],
    createdAt: now,
    updatedAt: now,
  };
  if (job.idempotencyKey !== undefined) doc.idempotencyKey = requireString(job.idempotencyKey, 'job.idempotencyKey');
  if (job.parentId !== undefined) {
    doc.parentId = requireString(job.parentId, 'job.parentId');
    doc.holdForParent = true; // its parent is running: it may wait for this job long after it completes
  }
  if (job.scheduledFor !== undefined) doc.scheduledFor = requireDate(job.scheduledFor, 'job.scheduledFor');
  if (job.trace !== undefined) doc.trace = requireTraceContext(job.trace, 'job.trace');
  if (job.rateLimitKey !== undefined) doc.rateLimitKey = requireString(job.rateLimitKey, 'job.rateLimitKey');
  if (job.groupKey !== undefined) doc.groupKey = requireString(job.groupKey, 'job.groupKey');
  if (job.forkedFrom !== undefined) doc.forkedFrom = requireString(job.forkedFrom, 'job.forkedFrom');
  if (job.debounceKey !== undefined) {
    doc.debounceKey = requireString(job.debounceKey, 'job.debounceKey');
    if (doc.idempotencyKey !== undefined) throw new StoreArgumentError('a job cannot have both a debounceKey and an idempotencyKey; nothing was enqueued');
  }
  const flowKey = doc.groupKey ?? doc.rateLimitKey;
  if (flowKey !== undefined) doc.flowKey = flowKey;
  return doc;
}

/** Lease a job: fresh token, expiry, one more attempt. `startedAt` is kept from the first run. */
export function claimUpdate(lease: { owner: string; token: string; until: Date }, now: Date): UpdateFilter<JobDocument> {
  return {
    $set: { status: LIFECYCLE_TO.claim, lease, claimAt: leaseExpiredAt(lease.until), updatedAt: now },
    $inc: { attempt: 1 },
    $min: { startedAt: now },
    // A job that started no longer takes the debounced enqueues of its key.
    $unset: { waitingFor: '', debounceKey: '' },
  };
}

/**
 * {@link claimUpdate} as one update pipeline for many jobs: the same fields, with each job's token
 * computed from its `_id` by `token` (see `ClaimRound`). Every value is a `$literal`, so no owner
 * string is read as a field path.
 */
export function claimRoundPipeline(lease: { owner: string; until: Date }, token: Document, now: Date): Document[] {
  return [
    { $unset: ['lease', 'waitingFor', 'debounceKey'] },
    {
      $set: {
        status: { $literal: LIFECYCLE_TO.claim },
        lease: { owner: { $literal: lease.owner }, token, until: { $literal: lease.until } },
        claimAt: { $literal: leaseExpiredAt(lease.until) },
        updatedAt: { $literal: now },
        attempt: { $add: [{ $ifNull: ['$attempt', 0] }, 1] },
        startedAt: { $min: ['$startedAt', { $literal: now }] },
      },
    },
  ];
}

/**
 * A debounced enqueue meeting the queued job of its key: the new payload, start, priority, attempts
 * and flow keys replace the old ones (the job keeps its id and creation time).
 */
export function debounceUpdate(doc: JobDocument): UpdateFilter<JobDocument> {
  const set: Partial<JobDocument> = {
    payload: doc.payload,
    runAt: doc.runAt,
    claimAt: doc.runAt,
    priority: doc.priority,
    maxAttempts: doc.maxAttempts,
    updatedAt: doc.updatedAt,
  };
  const unset: Record<string, ''> = {};
  for (const field of ['rateLimitKey', 'groupKey', 'flowKey', 'trace', 'payloadRef'] as const) {
    if (doc[field] === undefined) unset[field] = '';
    else (set as Record<string, unknown>)[field] = doc[field];
  }
  return Object.keys(unset).length === 0 ? { $set: set } : { $set: set, $unset: unset };
}

/**
 * Undoes {@link claimUpdate} for jobs a failed claim leased without handing them to anyone (no row
 * of `LIFECYCLE`: nobody saw the claim): back to `queued`, claimable at their own `runAt`, the attempt given back. An update pipeline, because
 * `claimAt` takes each job's own `runAt`.
 */
export function releaseClaimPipeline(now: Date): Document[] {
  requireDate(now, 'now');
  return [{ $set: { status: 'queued', claimAt: '$runAt', attempt: { $subtract: ['$attempt', 1] }, updatedAt: now } }, { $unset: 'lease' }];
}

/** Heartbeat. */
export function extendLeaseUpdate(until: Date, now: Date): UpdateFilter<JobDocument> {
  requireDate(until, 'lease until');
  return { $set: { 'lease.until': until, claimAt: leaseExpiredAt(until), updatedAt: now } };
}

/**
 * `running → completed` (written through `completeKeepingHolds`, which may keep `finishedAt`
 * aside). The lease goes to `completedLease`: the token that completed the job stays readable.
 */
export function completeUpdate(
  result: unknown,
  now: Date,
  logs?: { lines: JobLogLine[]; keep: number },
  resultRef?: StoredValueRef,
): UpdateFilter<JobDocument> & { $set: Partial<JobDocument> } {
  const update: UpdateFilter<JobDocument> & { $set: Partial<JobDocument> } = {
    $set: { status: LIFECYCLE_TO.complete, finishedAt: now, updatedAt: now },
    $unset: { claimAt: '' },
    $rename: { lease: 'completedLease' },
    ...(logs === undefined ? {} : (logsPush(logs.lines, logs.keep, 'complete') as UpdateFilter<JobDocument>)),
  };
  if (result === undefined) (update.$unset as Record<string, ''>).result = '';
  else (update.$set as Record<string, unknown>).result = result;
  // A result in the payload bucket (offloaded-values.ts): its reference instead.
  if (resultRef !== undefined) update.$set.resultRef = resultRef;
  return update;
}

/** `running → queued` after a failure; the error joins a bounded history. */
export function retryUpdate(runAt: Date, error: ErrorRecord, now: Date): UpdateFilter<JobDocument> {
  requireDate(runAt, 'retry runAt');
  return {
    $set: { status: LIFECYCLE_TO.retry, runAt, claimAt: runAt, updatedAt: now },
    $unset: { lease: '' },
    $push: { errors: { $each: [error], $slice: -MAX_ERROR_HISTORY } },
  };
}

/** `running → queued` at `runAt` giving the attempt back (release, durable sleep). */
export function requeueUpdate(runAt: Date, now: Date, name: 'release' | 'sleep' = 'release'): UpdateFilter<JobDocument> {
  requireDate(runAt, 'runAt');
  return {
    $set: { status: LIFECYCLE_TO[name], runAt, claimAt: runAt, updatedAt: now, ...(name === 'sleep' ? { sleepUntil: runAt } : {}) },
    $unset: { lease: '' },
    $inc: { attempt: -1 },
  };
}

/** `running → waiting` for a signal or children, giving the attempt back; the timeout becomes `runAt`. */
export function waitUpdate(condition: WaitCondition, timeoutAt: Date | undefined, now: Date): UpdateFilter<JobDocument> {
  const set: Record<string, unknown> = { status: LIFECYCLE_TO.wait, waitingFor: condition, updatedAt: now };
  const unset: Record<string, ''> = { lease: '' };
  if (timeoutAt === undefined) unset.claimAt = '';
  else set.runAt = set.claimAt = requireDate(timeoutAt, 'wait timeoutAt');
  return { $set: set, $unset: unset, $inc: { attempt: -1 } };
}

/** How a step joins the job: appended (no step of that name yet) or replacing a `pending` one. */
export type StepWrite = 'append' | 'replace-pending';

/** The array filter that picks the pending step of this name, for `replace-pending`. */
export const PENDING_STEP = 'pending';

/**
 * `update` plus writing `step`. The matching fence condition (`absentStep` / `pendingStep`) makes
 * it first-completed-write-wins; `replace-pending` needs `pendingStepArrayFilters(step.name)`.
 */
export function withStep(update: UpdateFilter<JobDocument>, step: StepRecord, how: StepWrite): UpdateFilter<JobDocument> {
  requireString(step?.name, 'step name');
  if (how === 'append') return { ...update, $push: { ...(update.$push as object), steps: step } } as UpdateFilter<JobDocument>;
  return { ...update, $set: { ...(update.$set as object), [`steps.$[${PENDING_STEP}]`]: step } } as UpdateFilter<JobDocument>;
}

/** Array filters for `withStep(..., 'replace-pending')`. */
export function pendingStepArrayFilters(name: string): Document[] {
  return [{ [`${PENDING_STEP}.name`]: { $eq: requireString(name, 'step name') }, [`${PENDING_STEP}.status`]: 'pending' }];
}

/** `waiting → queued` now (a child finished, a signal arrived). */
export function wakeUpdate(now: Date, name: 'wake' | 'signalWake' = 'wake'): UpdateFilter<JobDocument> {
  return { $set: { status: LIFECYCLE_TO[name], runAt: now, claimAt: now, updatedAt: now }, $unset: { waitingFor: '' } };
}

/** Store a signal on a job; when `wake`, the waiting job is queued in the same write. */
export function signalUpdate(signal: { name: string; data: unknown; id?: string }, now: Date, wake: boolean): UpdateFilter<JobDocument> {
  const stored: StoredSignal = { name: requireString(signal.name, 'signal name'), data: signal.data, at: now, sid: new ObjectId() };
  if (signal.id !== undefined) stored.id = requireString(signal.id, 'signal id');
  if (!wake) return { $push: { signals: stored }, $set: { updatedAt: now } };
  return { ...wakeUpdate(now, 'signalWake'), $push: { signals: stored } };
}

/** Touch the job; combined with {@link withStep} to record a step on its own. */
export function touchUpdate(now: Date): UpdateFilter<JobDocument> {
  return { $set: { updatedAt: now } };
}

/** Take one stored signal off (by its store id); the step is added with {@link withStep}. */
export function consumeSignalUpdate(sid: ObjectId, now: Date): UpdateFilter<JobDocument> {
  return { $pull: { signals: { sid } }, $set: { updatedAt: now } };
}

/** Appends log lines, keeping the last `keep` (one `$push` with `$each` and `$slice`). */
export function appendLogsUpdate(lines: JobLogLine[], now: Date, keep = DEFAULT_JOB_LOG_LINES): UpdateFilter<JobDocument> {
  return { ...logsPush(lines, keep, 'appendLogs'), $set: { updatedAt: now } } as UpdateFilter<JobDocument>;
}

/** The `$push` that appends checked log lines and keeps the tail's last `keep` (`what` names the call in errors). */
export function logsPush(lines: JobLogLine[], keep: number, what: string): { $push: Document } {
  const problem = jobLogProblem(lines);
  if (problem !== undefined) throw new StoreArgumentError(`${what} lines ${problem}`);
  const keepProblem = jobLogKeepProblem(keep);
  if (keepProblem !== undefined) throw new StoreArgumentError(`${what} keep ${keepProblem}`);
  const copies = lines.map((l) => ({ at: l.at, level: l.level, msg: l.msg, attempt: l.attempt, ...(l.fields === undefined ? {} : { fields: l.fields }) }));
  return { $push: { logs: { $each: copies, $slice: -keep } } };
}

/** Handler progress. */

export function progressUpdate(value: unknown, now: Date): UpdateFilter<JobDocument> {
  return { $set: { progress: value, updatedAt: now } };
}

/** The dead letter for a fenced running job: the job as it died, keyed by the job's own `_id`. */
export function deadLetterDocument(job: JobDocument, outcome: { reason: string; error?: ErrorRecord; now: Date }): DeadLetterDocument {
  const { _id, lease, claimAt: _claimAt, ...rest } = job;
  const errors = outcome.error ? [...job.errors, outcome.error].slice(-MAX_ERROR_HISTORY) : job.errors;
  return {
    _id,
    name: job.name,
    queue: job.queue,
    reason: requireString(outcome.reason, 'dead-letter reason'),
    diedAt: outcome.now,
    leaseToken: lease?.token ?? '',
    job: { ...rest, status: LIFECYCLE_TO.deadLetter, errors, deadReason: outcome.reason, finishedAt: outcome.now, updatedAt: outcome.now },
  };
}

/** A replayed dead letter: the same job id, queued now, attempts and lease reset. */
export function replayedJobDocument(dead: DeadLetterDocument, now: Date): JobDocument {
  const { finishedAt: _f, deadReason: _d, result: _r, waitingFor: _w, ...job } = dead.job;
  const priorAttempts = (job.priorAttempts ?? 0) + job.attempt;
  return { ...job, _id: dead._id, status: LIFECYCLE_TO.replay, attempt: 0, priorAttempts, runAt: now, claimAt: now, updatedAt: now };
}

/** A new job's steps (`NewJob.steps`): an array of step records, stored as given. */
function requireSteps(steps: unknown): StepRecord[] {
  if (!Array.isArray(steps) || steps.some((s) => typeof s !== 'object' || s === null || typeof (s as StepRecord).name !== 'string')) {
    throw new StoreArgumentError('job.steps must be an array of step records');
  }
  return steps as StepRecord[];
}
