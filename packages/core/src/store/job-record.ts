import { findPlainDataProblem } from '../support/plain-data.js';
import type { OffloadedValue } from './payload-limits.js';
/**
 * The stored shape of a job, shared by every store. See `LIFECYCLE.md` for the state machine.
 */

/** Where a job is in its life. */
export type JobStatus = 'queued' | 'running' | 'waiting' | 'completed' | 'dead' | 'cancelled';

/** The statuses a job can leave again; `completed`, `dead` and `cancelled` are terminal (dead and cancelled can be retried). */
export const ACTIVE_STATUSES: readonly JobStatus[] = ['queued', 'running', 'waiting'];

/** The terminal statuses: a job in one of them never runs again unless retried. */
export const FINISHED_STATUSES: readonly JobStatus[] = ['completed', 'dead', 'cancelled'];

/** Every status, in the order of a job's life. */
export const JOB_STATUSES: readonly JobStatus[] = [...ACTIVE_STATUSES, ...FINISHED_STATUSES];

/** One worker's hold on a running job. Every write after the claim must present `token`. */
export interface Lease {
  /** Which engine instance holds it (for humans and logs). */
  owner: string;
  /** A token unique to this claim (never reused by any claim): the fence every later write is checked against. */
  token: string;
  /** The lease is presumed dead after this instant; the job can then be reclaimed. */
  until: Date;
}

/** What a fenced store operation presents: the job and the token it was claimed with. */
export interface LeaseRef {
  jobId: string;
  token: string;
}

/** One failed attempt, kept in the job's bounded error history. */
export interface ErrorRecord {
  /**
   * Which attempt failed, counted over the job's whole life: after a replay or `jobs.retry` it
   * goes on from the attempts before (`priorAttempts + attempt`), so no number appears twice.
   */
  attempt: number;
  at: Date;
  name: string;
  message: string;
  stack?: string;
  /** A Loom error code, when the error had one. */
  code?: string;
}

/** The kinds of durable records a workflow run leaves behind, in the order it reached them. */
export type StepKind = 'step' | 'sleep' | 'enqueue' | 'signal' | 'wait';

/** A memoized workflow step: first write wins, later attempts replay `result`. */
export interface StepRecord {
  name: string;
  kind: StepKind;
  /** `completed` steps replay their result; `pending` marks a sleep or wait still in progress. */
  status: 'completed' | 'pending';
  result?: unknown;
  error?: ErrorRecord;
  /** For sleeps and timed waits: when the job should wake. */
  wakeAt?: Date;
  at: Date;
  /** For a `signal` step: the id the signal was sent with, if any (a resend with that id is then recognised). */
  signalId?: string;
  /**
   * 0-based position at which the run reached this step (its call order, not its completion
   * order), so replays can check they reach steps in the recorded order. Stores keep it as given;
   * records written without it (e.g. by `consumeSignal`) are not order-checked.
   */
  seq?: number;
}

/** A signal sent to a job, stored until a run consumes it. */
export interface SignalRecord {
  name: string;
  data: unknown;
  at: Date;
  /** The sender's id for it, if given: a second signal with this id is not stored. */
  id?: string;
}

/** What a `waiting` job waits for; it also becomes claimable at `runAt` (its timeout), if set. */
export interface WaitCondition {
  /** Wakes when a signal of this name arrives. */
  signal?: string;
  /** Wakes when these jobs have all finished (completed or dead). */
  jobs?: string[];
  /**
   * A job enqueued with `dependsOn`: the ids of its dependencies that have not completed yet. It
   * becomes `queued` when the last one completes (see {@link DependencyFailurePolicy} for one that
   * dies or is cancelled). Such a job has no timeout: it is never claimable while waiting.
   */
  dependencies?: string[];
}

/**
 * What a job enqueued with `dependsOn` does when one of its dependencies dies or is cancelled:
 * `'fail'` (the default) dead-letters it with `DEPENDENCY_FAILED`; `'cancel'` cancels it; `'run'`
 * counts the dependency as met, so the job runs once the others have ended.
 */
export type DependencyFailurePolicy = 'fail' | 'cancel' | 'run';

/**
 * The trace context a job was enqueued in (W3C Trace Context), stored with the job so its runs
 * continue the enqueuer's trace in whatever process runs them. Written by the engine when an
 * OpenTelemetry SDK is active; stores keep it as given.
 */
export interface JobTraceContext {
  /** W3C `traceparent` of the `publish` span: `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`. */
  traceparent: string;
  /** W3C `tracestate` of that span, when it had one. */
  tracestate?: string;
  /** Jobs of one `enqueueMany` batch: their runs link to the publish span instead of continuing its trace. */
  link?: boolean;
}

/** A job as stored. Dates are `Date`s; ids are strings whatever the store uses inside. */
export interface JobRecord {
  id: string;
  name: string;
  queue: string;
  payload: unknown;
  status: JobStatus;
  /** Higher runs first. */
  priority: number;
  /** Not claimable before this instant (delay, backoff, durable sleep, wait timeout). */
  runAt: Date;
  /** Attempts used so far; a claim adds one, a sleep, wait or release gives it back. */
  attempt: number;
  /**
   * Attempts used before the job was last queued again with its attempts reset (a dead-letter
   * replay, `jobs.retry`), summed over all such resets; absent until the first. The error
   * history numbers attempts from it.
   */
  priorAttempts?: number;
  /** `retries + 1`. A claim that would exceed it sends the job to the dead letters instead. */
  maxAttempts: number;
  idempotencyKey?: string;
  lease?: Lease;
  /** Bounded history of failures, oldest first. */
  errors: ErrorRecord[];
  steps: StepRecord[];
  /** Signals received and not yet consumed. */
  signals: SignalRecord[];
  waitingFor?: WaitCondition;
  result?: unknown;
  progress?: unknown;
  /** The job that enqueued this one through `ctx.enqueue`. */
  parentId?: string;
  /** Cron runs: the fire time this job is for. */
  scheduledFor?: Date;
  /** The jobs this one was enqueued to run after (`dependsOn`), in the order given. */
  dependsOn?: string[];
  /** With `dependsOn`: what a dependency that dies or is cancelled does to this job (absent: `'fail'`). */
  onDependencyFailure?: DependencyFailurePolicy;
  /** The jobs enqueued with this one in their `dependsOn`, in enqueue order. */
  dependents?: string[];
  /** The trace the job was enqueued in (see {@link JobTraceContext}). */
  trace?: JobTraceContext;
  createdAt: Date;
  updatedAt: Date;
  /** When it first started running. */
  startedAt?: Date;
  /** The last lines its handlers wrote to `ctx.log` (at most {@link MAX_JOB_LOG_LINES}, oldest first). */
  logs?: JobLogLine[];
  /**
   * When the job's latest durable sleep (`ctx.sleep`, `ctx.sleepUntil`) ends. Written by the sleep
   * transition and left in place: the job is asleep while it is `queued` and this is after now.
   */
  sleepUntil?: Date;
  /** When it completed or died. */
  finishedAt?: Date;
  /** Dead jobs: why (the final error's message, or a reason such as "lease expired 4 times"). */
  deadReason?: string;
  /**
   * A running job whose cancel was requested (`jobs.cancel`): when. The lease holder sees it on its
   * next lease extension, aborts the handler and ends the job `cancelled`. Until then every fenced
   * write but the lease extension and that ending is refused.
   */
  cancelRequestedAt?: Date;
  /** The reason given to `jobs.cancel`, on a cancel-requested or cancelled job. */
  cancelReason?: string;
  /** The job's `rateLimit.key(payload)`, when its rate limit is per key. */
  rateLimitKey?: string;
  /** The job's `group.key(payload)`: its group for group concurrency and fair turns. */
  groupKey?: string;
  /**
   * The job's `debounce.key(payload)`, until it first starts: an enqueue with this key while the
   * job is still queued updates it instead of adding a job.
   */
  debounceKey?: string;
  /** The job this one was forked from (`jobs.fork`), if it was. */
  forkedFrom?: string;
  /** The batch this job is a member of (`loom.batches.create`): its end moves the batch's counts. */
  batchId?: string;
  /** On a batch callback: the batch whose end enqueued it, and on which outcome (its `ctx.batch`). */
  batchCallback?: BatchCallbackRef;
  /**
   * Set when the store keeps the payload outside the job's record (over its `offloadThreshold`):
   * where and how large. Reads of one job (`getJob`, claims) load the payload all the same; lists
   * (`listJobs`) leave `payload` undefined and read no more than this reference.
   */
  offloadedPayload?: OffloadedValue;
  /** As {@link offloadedPayload}, for the result: `getJob` loads it, lists leave `result` undefined. */
  offloadedResult?: OffloadedValue;
}

/** When a batch callback runs: `complete` always, `success` when every member completed, `failure` when any died or was cancelled. */
export type BatchCallbackOn = 'complete' | 'success' | 'failure';

/** On a batch callback job: the batch whose end enqueued it, and on which outcome. */
export interface BatchCallbackRef {
  batchId: string;
  on: BatchCallbackOn;
}

/** What the engine hands a store to enqueue. Defaults are applied by the engine, not the store. */
export interface NewJob {
  name: string;
  queue: string;
  payload: unknown;
  priority: number;
  runAt: Date;
  maxAttempts: number;
  idempotencyKey?: string;
  parentId?: string;
  scheduledFor?: Date;
  /**
   * Ids of stored jobs this one runs after. Every one must exist (else an
   * `InvalidDependenciesError`, nothing stored). While any has not completed, the job is stored
   * `waiting` (`waitingFor.dependencies`) instead of `queued`.
   */
  dependsOn?: string[];
  /**
   * Positions, in the same `enqueue` call, of jobs this one runs after (a DAG stored in one call).
   * A cycle among them is refused with an `InvalidDependenciesError`, nothing stored.
   */
  dependsOnBatch?: number[];
  /** With dependencies: see {@link DependencyFailurePolicy}. Stores keep it as given (absent: `'fail'`). */
  onDependencyFailure?: DependencyFailurePolicy;
  trace?: JobTraceContext;
  rateLimitKey?: string;
  groupKey?: string;
  /**
   * When a job with this key is `queued` and has never started, the enqueue replaces its payload,
   * `runAt`, priority and `maxAttempts` with this job's and returns its id (`debounced: true`)
   * instead of storing a new job.
   */
  debounceKey?: string;
  /**
   * Steps the job starts with (`jobs.fork`: the recorded steps of another job before a given
   * step), replayed by its first run as if it had recorded them. Stored as given. Default: none.
   */
  steps?: StepRecord[];
  /** The job this one was forked from (`jobs.fork`). */
  forkedFrom?: string;
}

/** The outcome of one enqueue. */
export interface EnqueueResult {
  id: string;
  /** True when the idempotency key was taken: `id` is the existing job and nothing was stored. */
  deduplicated: boolean;
  /** True when a queued job with the same `debounceKey` was updated instead (`id` is that job). */
  debounced?: boolean;
}

/** A dead job as kept in the dead-letter collection. `id` is the job's id. */
export interface DeadLetter {
  id: string;
  job: JobRecord;
  reason: string;
  diedAt: Date;
}

/** Per-schedule state the cron scheduler keeps in the store. */
export interface ScheduleRecord {
  /** The job name the schedule belongs to. */
  name: string;
  /** The newest fire time already enqueued, or null before the first. */
  lastFireAt: Date | null;
  /** When this schedule was first seen: slots before it are never "missed". */
  firstSeenAt: Date;
  /**
   * The slots the last advance chose to fire whose jobs may not be enqueued yet: set by
   * `advanceSchedule` in the same write as `lastFireAt`, cleared by `markScheduleFired` once they
   * are. Non-empty for longer than an enqueue takes means the instance that advanced died in
   * between; another one enqueues them.
   */
  firing: Date[];
  paused: boolean;
  updatedAt: Date;
  /**
   * What a run of the schedule is, as the engine that last started with it described it: lets
   * tools without the job classes (the `loom` command line) show, resume and trigger it.
   */
  description?: ScheduleDescription;
}

/** A schedule as the engine describes it to the store (see {@link ScheduleRecord.description}). */
export interface ScheduleDescription {
  cron: string;
  timezone: string;
  /** The job every fire enqueues. */
  job: { queue: string; payload: unknown; priority: number; maxAttempts: number };
}

/** Counts per queue and status, plus dead letters. */
export interface StoreStats {
  queues: Record<string, Partial<Record<JobStatus, number>>>;
  deadLetters: number;
}

/** One line a handler wrote to `ctx.log`, as the job keeps it. */
export interface JobLogLine {
  /** When it was written (the engine's clock). */
  at: Date;
  level: 'debug' | 'info' | 'warn' | 'error';
  /** The message, cut at {@link MAX_JOB_LOG_LINE_CHARS} characters. */
  msg: string;
  /** The attempt that wrote it. */
  attempt: number;
  /**
   * The object logged with it (`ctx.log.info({ orderId }, 'msg')`) and the bindings of
   * `ctx.log.child(...)`, as JSON data: errors as `{ name, message, code }`, dates as ISO strings;
   * at most {@link MAX_JOB_LOG_FIELDS_BYTES} serialized (larger objects are cut to a `truncated` string).
   */
  fields?: Record<string, unknown>;
}

/** A job keeps its last this many `ctx.log` lines unless `Loom.create({ jobLogs: { lines } })` says otherwise. */
export const DEFAULT_JOB_LOG_LINES = 100;
/** A job's kept lines weigh at most this many bytes (message and fields) unless `Loom.create({ jobLogs: { bytes } })` says otherwise: 16 KiB. */
export const DEFAULT_JOB_LOG_BYTES = 16 * 1024;
/** The most lines a store keeps per job, whatever it is asked (`appendLogs`'s `keep`). */
export const MAX_JOB_LOG_LINES = 1000;
/** The most bytes a job's tail may be configured to: 1 MiB. */
export const MAX_JOB_LOG_BYTES = 1024 * 1024;
/** Longest message kept per line. */
export const MAX_JOB_LOG_LINE_CHARS = 500;
/** Largest `fields` kept per line, serialized. */
export const MAX_JOB_LOG_FIELDS_BYTES = 2048;
const LOG_LEVELS: readonly string[] = ['debug', 'info', 'warn', 'error'];

/** What a kept line weighs against the bytes cap: its message and fields as UTF-8, plus 32 for time, level and attempt. */
export function jobLogLineBytes(line: Pick<JobLogLine, 'msg' | 'fields'>): number {
  return 32 + Buffer.byteLength(line.msg) + (line.fields === undefined ? 0 : Buffer.byteLength(JSON.stringify(line.fields)));
}

/** Why `lines` are not log lines a store may keep, or undefined when they are (stores check before writing). */
export function jobLogProblem(lines: unknown): string | undefined {
  if (!Array.isArray(lines)) return 'must be an array of { at, level, msg, attempt, fields? }';
  for (const [i, line] of lines.entries()) {
    const l = line as Partial<JobLogLine> | null;
    if (typeof l !== 'object' || l === null) return `[${i}] must be an object`;
    if (!(l.at instanceof Date) || Number.isNaN(l.at.getTime())) return `[${i}].at must be a valid Date`;
    if (typeof l.level !== 'string' || !LOG_LEVELS.includes(l.level)) return `[${i}].level must be debug, info, warn or error`;
    if (typeof l.msg !== 'string' || l.msg.length > MAX_JOB_LOG_LINE_CHARS)
      return `[${i}].msg must be a string of at most ${MAX_JOB_LOG_LINE_CHARS} characters`;
    if (!Number.isInteger(l.attempt)) return `[${i}].attempt must be an integer`;
    if (l.fields !== undefined) {
      const problem =
        typeof l.fields === 'object' && l.fields !== null && !Array.isArray(l.fields) ? findPlainDataProblem(l.fields, MAX_JOB_LOG_FIELDS_BYTES) : null;
      if (typeof l.fields !== 'object' || l.fields === null || Array.isArray(l.fields) || problem)
        return `[${i}].fields must be a plain object of at most ${MAX_JOB_LOG_FIELDS_BYTES} bytes${problem ? ` (${problem.path || 'it'} ${problem.reason})` : ''}`;
    }
  }
  return undefined;
}

/** Why `keep` is not a number of lines `appendLogs` may keep, or undefined. */
export function jobLogKeepProblem(keep: unknown): string | undefined {
  return Number.isInteger(keep) && (keep as number) >= 1 && (keep as number) <= MAX_JOB_LOG_LINES
    ? undefined
    : `must be a whole number from 1 to ${MAX_JOB_LOG_LINES}`;
}
