/**
 * The shapes of the store operations that find and steer jobs from outside a run (`loom.jobs`,
 * `loom.queues`, the `loom` command line). See `OPERATIONS.md`.
 */
import type { FlowHeldBy } from './flow.js';
import type { JobRecord, JobStatus } from './job-record.js';
import type { PayloadMatch } from './payload-match.js';

/** A job as lists show it: everything but the payload, steps, signals, errors and result. */
export interface JobSummary {
  id: string;
  name: string;
  queue: string;
  status: JobStatus;
  priority: number;
  attempt: number;
  maxAttempts: number;
  runAt: Date;
  createdAt: Date;
  updatedAt: Date;
  startedAt?: Date;
  finishedAt?: Date;
  deadReason?: string;
  progress?: unknown;
  idempotencyKey?: string;
  parentId?: string;
  cancelRequestedAt?: Date;
  cancelReason?: string;
  /** The end of the job's latest durable sleep: it is asleep while `queued` and this is after now. */
  sleepUntil?: Date;
  /**
   * A `queued` job that is due but held back, and by what: its queue is paused, or a flow limit of
   * its name or key is reached. Only in pages asked for with `now`, and only where the store knows
   * (it learns a name's limits from the claims of engines that run it).
   */
  heldBy?: FlowHeldBy;
  /** Bytes of the payload, when the store keeps it outside the job's record (the summary never carries a payload). */
  payloadSize?: number;
  /** Bytes of the result, when the store keeps it outside the job's record. */
  resultSize?: number;
}

/** The fields a {@link JobSummary} copies from a {@link JobRecord}, when present. */
export const JOB_SUMMARY_OPTIONAL_FIELDS = [
  'startedAt',
  'finishedAt',
  'deadReason',
  'progress',
  'idempotencyKey',
  'parentId',
  'cancelRequestedAt',
  'cancelReason',
  'sleepUntil',
] as const satisfies readonly (keyof JobSummary & keyof JobRecord)[];

/** The fields of a job a summary is made of. */
export type JobSummarySource = Pick<JobRecord, Exclude<keyof JobSummary, 'heldBy' | 'payloadSize' | 'resultSize'>> &
  Partial<Pick<JobRecord, 'offloadedPayload' | 'offloadedResult'>>;

/** The summary of a stored job (values are not copied: callers copy what they keep). */
export function toJobSummary(job: JobSummarySource): JobSummary {
  const summary: JobSummary = {
    id: job.id,
    name: job.name,
    queue: job.queue,
    status: job.status,
    priority: job.priority,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    runAt: job.runAt,
    createdAt: job.createdAt,
    updatedAt: job.updatedAt,
  };
  for (const field of JOB_SUMMARY_OPTIONAL_FIELDS) {
    if (job[field] !== undefined) (summary as unknown as Record<string, unknown>)[field] = job[field];
  }
  if (job.offloadedPayload !== undefined) summary.payloadSize = job.offloadedPayload.size;
  if (job.offloadedResult !== undefined) summary.resultSize = job.offloadedResult.size;
  return summary;
}

/** Where a page starts: just after this job in list order (createdAt descending, then id descending). */
export interface JobPagePosition {
  createdAt: Date;
  id: string;
}

/**
 * What {@link JobStore.listJobPage} is asked for. Every field is a plain value, already checked by
 * the engine; stores check types again and never put a caller's value in an operator position.
 */
export interface JobPageQuery {
  /** Only these statuses (at least one). */
  statuses: JobStatus[];
  name?: string;
  queue?: string;
  /** Only jobs created strictly after this instant. */
  createdAfter?: Date;
  /** Only jobs created strictly before this instant. */
  createdBefore?: Date;
  /** Only the job with this idempotency key (live or dead). */
  idempotencyKey?: string;
  /**
   * Only jobs whose payload meets every condition (equality; see `payloadMatches`). Stores check each
   * with `payloadMatchProblem` again: a path becomes a key of a database filter.
   */
  payload?: PayloadMatch[];
  /** Only jobs after this one in list order (the previous page's last job). */
  after?: JobPagePosition;
  /** At most this many (>= 1). */
  limit: number;
  /** The engine's time: with it, due `queued` jobs held back by a pause or a flow limit carry `heldBy`. */
  now?: Date;
}

/** List order of job pages: newest first by `createdAt`, ties by id descending. Negative when `a` comes first. */
export function compareListOrder(a: JobPagePosition, b: JobPagePosition): number {
  const byTime = b.createdAt.getTime() - a.createdAt.getTime();
  if (byTime !== 0) return byTime;
  return a.id > b.id ? -1 : a.id < b.id ? 1 : 0;
}

/**
 * What a cancel did: `cancelled` (a queued or waiting job, or a running one whose lease had already
 * expired, is now `cancelled`), `requested` (a running job is flagged; the lease holder ends it),
 * or `unchanged` (it had finished; `job.status` says how).
 */
export interface CancelOutcome {
  outcome: 'cancelled' | 'requested' | 'unchanged';
  /** The job after the operation. */
  job: JobSummary;
}

/** What a retry of a finished job did: `retried` (now `queued`) or `unchanged` (not dead or cancelled). */
export interface RetryOutcome {
  outcome: 'retried' | 'unchanged';
  /** The job's status after the operation. */
  status: JobStatus;
}

/**
 * What a run-now did: `due` (a `queued` job that was to run later now runs at `now`) or `unchanged`
 * (not queued, already due, or asleep in a workflow: a sleep woken early would only sleep again).
 */
export interface RunNowOutcome {
  outcome: 'due' | 'unchanged';
  /** The job's status after the operation. */
  status: JobStatus;
}

/** What a removal did: `removed` (a finished job is gone) or `unchanged` (it has not finished). */
export interface RemoveOutcome {
  outcome: 'removed' | 'unchanged';
  /** The job's status before the operation. */
  status: JobStatus;
}

/** Jobs per status in one queue; dead letters count under `dead`. */
export type QueueCounts = Record<JobStatus, number>;

/** A queue as `queues.list()` reports it. */
export interface QueueSummary {
  name: string;
  /** Claims skip a paused queue (enqueue still works). */
  paused: boolean;
  counts: QueueCounts;
  /** When the oldest job still `queued` in it was created. */
  oldestQueuedAt?: Date;
  /**
   * Of the `queued` jobs, how many sleep in a workflow (`ctx.sleep`) at the `now` the list was asked
   * for; absent when it was asked for without `now`. They wait for a time, not for a worker.
   */
  sleeping?: number;
}

/** Counts with every status at zero. */
export function emptyQueueCounts(): QueueCounts {
  return { queued: 0, running: 0, waiting: 0, completed: 0, dead: 0, cancelled: 0 };
}

/** What a bulk replay of dead letters did. */
export interface DeadLetterReplayReport {
  /** Dead letters put back in their queue. */
  replayed: number;
  /** Dead letters that matched but could not be replayed (e.g. their idempotency key is taken), with why. */
  skipped: { id: string; reason: string }[];
}
