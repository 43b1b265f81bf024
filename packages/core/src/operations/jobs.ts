import type { Clock } from '../support/clock.js';
import { InvalidArgumentError, JobNotFoundError, LoomError, NotPlainDataError } from '../support/errors.js';
import { findPlainDataProblem } from '../support/plain-data.js';
import { payloadLimitsOf, payloadTooLarge } from '../store/payload-limits.js';
import type { Logger } from '../support/logger.js';
import { ACTIVE_STATUSES, type JobRecord, type JobStatus, type StepRecord } from '../store/job-record.js';
import type { JobSummary } from '../store/operations.js';
import type { JobStore } from '../store/store.js';
import { wakeIfJobsFinished } from '../workflow/parent-wake.js';
import { plainString } from './plain-string.js';
import { exportRun, type RunRecord } from './run-export.js';
import { toJobPage, toPageQuery, type JobListFilter, type JobPage } from './job-list-filter.js';
import { BulkJobs, type BulkCancelOptions, type BulkOptions, type BulkResult, type BulkTarget, type CleanOptions } from './bulk-jobs.js';

/** What `jobs.cancel` did. */
export interface CancelResult {
  /**
   * True when the job is now `cancelled`, or (a running job) its cancel was requested: the engine
   * instance running it aborts `ctx.signal` within one heartbeat and ends it `cancelled`.
   */
  cancelled: boolean;
  /** The job's status after the call: `cancelled`; `running` for a requested cancel; else the finished status it kept. */
  status: JobStatus;
  /** With `{ children: true }`: how many of its children and dependents (recursively) were cancelled or had their cancel requested. */
  cascaded?: number;
}

/** Options of `jobs.cancel`. */
export interface CancelOptions {
  /** Kept on the job (at most 1,000 characters). */
  reason?: string;
  /**
   * Also cancel the job's children (jobs its run enqueued with `ctx.enqueue`) and dependents (jobs
   * enqueued with it in `dependsOn`) that are queued, waiting or running, and theirs, recursively.
   * They are cancelled deepest first, so a dependent is cancelled rather than failed by its
   * dependency's cancel.
   */
  children?: boolean;
}

/** What `jobs.retry` did: `retried` when a dead or cancelled job is `queued` again. */
export interface RetryResult {
  retried: boolean;
  status: JobStatus;
}

/** What `jobs.remove` did: `removed` when a finished job was deleted; `status` is the job's status before. */
export interface RemoveResult {
  removed: boolean;
  status: JobStatus;
}

/** What `jobs.runNow` did: `due` when a delayed `queued` job now runs at once; `status` is the job's status after. */
export interface RunNowResult {
  due: boolean;
  status: JobStatus;
}

/** Options of `jobs.fork`. */
export interface ForkOptions {
  /** The first step to run again: the steps recorded before it are kept, it and every later one run anew. */
  fromStep: string;
  /** The fork's payload. Default: the original's. */
  payload?: unknown;
}

/** What `jobs.fork` made: the new job's id and the names of the steps it kept. */
export interface ForkResult {
  id: string;
  keptSteps: string[];
}

/**
 * The completed steps `job` recorded before step `fromStep`, in call order: those with a lower
 * position (`seq`), and the markers (`ctx.patched`, no position) recorded before it.
 */
function stepsBefore(job: JobRecord, fromStep: string): StepRecord[] {
  const at = job.steps.findIndex((s) => s.name === fromStep);
  const from = job.steps[at];
  if (!from) {
    const names = job.steps.map((s) => s.name);
    throw new InvalidArgumentError(
      'jobs.fork fromStep',
      `job ${job.id} recorded no step "${fromStep}"${names.length ? ` (it recorded: ${names.join(', ')})` : ' (it recorded no step)'}; nothing changed`,
    );
  }
  return job.steps.filter((s, i) => {
    if (s.status !== 'completed' || s === from) return false;
    if (s.seq !== undefined && from.seq !== undefined && s.seq >= 0 && from.seq >= 0) return s.seq < from.seq;
    return i < at;
  });
}

/** Where the engine hooks into `jobs` (none when used on a bare store, e.g. by the `loom` command line). */
export interface JobsHooks {
  /** A queued or waiting job was cancelled by this call. */
  onCancelled?(job: JobSummary, reason: string | undefined): void;
  /** A running job's cancel was requested: the engine aborts it at once if it runs in this process. */
  onCancelRequested?(jobId: string, reason: string | undefined): void;
  /** A job became `queued` (retried): local workers may claim it. */
  onQueued?(): void;
}

/** Longest cancel reason kept (longer ones are cut). */
const MAX_REASON = 1_000;

function jobId(id: unknown, method: string): string {
  return plainString(id, `jobs.${method} id`);
}

/**
 * `loom.jobs`: find jobs and steer them. Every method is a store operation, so it works from any
 * process sharing the store (the `loom` command line builds one over a bare store), whether or not
 * an engine runs there.
 *
 * ```ts
 * const page = await loom.jobs.list({ status: ['dead', 'queued'], name: 'send-receipt', limit: 50 });
 * const more = page.next ? await loom.jobs.list({ status: ['dead', 'queued'], cursor: page.next }) : undefined;
 * await loom.jobs.cancel(id, { reason: 'customer asked' });
 * ```
 */
export class Jobs {
  private readonly bulk: BulkJobs;

  constructor(private readonly deps: { store: JobStore; clock: Clock; logger?: Logger; hooks?: JobsHooks }) {
    const orNull = async <T>(run: () => Promise<T>): Promise<T | null> => {
      try {
        return await run();
      } catch (err) {
        if (LoomError.is(err, 'JOB_NOT_FOUND')) return null; // removed meanwhile
        throw err;
      }
    };
    this.bulk = new BulkJobs({
      store: deps.store,
      clock: deps.clock,
      single: {
        cancel: (id, options) => orNull(() => this.cancel(id, options)),
        retry: (id) => orNull(() => this.retry(id)),
        remove: (id) => orNull(() => this.remove(id)),
        runNow: (id) => orNull(() => this.runNow(id)),
      },
    });
  }

  /**
   * A page of job summaries, newest first (dead jobs included), filtered by plain values. Pass the
   * page's `next` as `cursor` for the following page. An operator object, an unknown field, a limit
   * outside 1..500 or a cursor this method did not make is refused with `INVALID_ARGUMENT`.
   */
  async list(filter: JobListFilter = {}): Promise<JobPage> {
    const { query, limit } = toPageQuery(filter);
    // With the engine's time, the store marks due jobs a pause or a flow limit holds back (`heldBy`).
    return toJobPage(await this.deps.store.listJobPage({ ...query, now: this.deps.clock.now() }), limit);
  }

  /**
   * The full record of a job (also a dead one), or null when no job has this id. Its `logs` are
   * the `ctx.log` lines the job kept, oldest first: the last 100 and 16 KiB by default, across its
   * attempts (`Loom.create({ jobLogs })`); `list` never carries them.
   */
  get(id: string): Promise<JobRecord | null> {
    return this.deps.store.getJob(jobId(id, 'get'));
  }

  /**
   * Cancels a job. `queued` or `waiting`: `cancelled` at once (a parent waiting for it fails its
   * `waitForJob` with `CHILD_CANCELLED`). `running`: the instance running it, in any process,
   * aborts `ctx.signal` with a `CancelledError` within one heartbeat (lease / 3), discards the run's
   * outcome and ends it `cancelled`; the result then says `{ cancelled: true, status: 'running' }`.
   * A finished job is unchanged (`cancelled: false`). Throws `JOB_NOT_FOUND` for an unknown id.
   *
   * With `{ children: true }` its children and dependents that have not finished are cancelled
   * too, recursively (deepest first), also when the job itself has finished; `cascaded` counts them.
   */
  async cancel(id: string, options: CancelOptions = {}): Promise<CancelResult> {
    jobId(id, 'cancel');
    if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('jobs.cancel options', 'must be an object; nothing changed');
    const { reason, children } = options;
    if (reason !== undefined && typeof reason !== 'string') throw new InvalidArgumentError('jobs.cancel reason', 'must be a string; nothing changed');
    if (children !== undefined && typeof children !== 'boolean') throw new InvalidArgumentError('jobs.cancel children', 'must be a boolean; nothing changed');
    const kept = reason === undefined ? undefined : reason.slice(0, MAX_REASON);
    if (!children) return this.cancelOne(id, kept);
    const root = await this.deps.store.getJob(id);
    if (!root) throw new JobNotFoundError(id);
    let cascaded = 0;
    for (const descendant of (await this.descendants(root)).reverse()) {
      const result = await this.cancelOne(descendant, kept).catch((err: unknown) => {
        if (LoomError.is(err, 'JOB_NOT_FOUND')) return undefined; // removed meanwhile
        throw err;
      });
      if (result?.cancelled) cascaded += 1;
    }
    return { ...(await this.cancelOne(id, kept)), cascaded };
  }

  /**
   * The active children and dependents of `root`, recursively, each once, in breadth-first order
   * (parents before theirs). Reads one page of children per job (an index range) and each dependent.
   */
  private async descendants(root: JobRecord): Promise<string[]> {
    const { store } = this.deps;
    const seen = new Set<string>([root.id]);
    const order: string[] = [];
    const queue: JobRecord[] = [root];
    while (queue.length > 0) {
      const job = queue.shift()!;
      const found = await store.listJobs({ parentId: job.id, status: [...ACTIVE_STATUSES] });
      for (const id of job.dependents ?? []) {
        if (seen.has(id)) continue;
        const dependent = await store.getJob(id);
        if (dependent && ACTIVE_STATUSES.includes(dependent.status)) found.push(dependent);
      }
      for (const next of found) {
        if (seen.has(next.id)) continue;
        seen.add(next.id);
        order.push(next.id);
        queue.push(next);
      }
    }
    return order;
  }

  private async cancelOne(id: string, kept: string | undefined): Promise<CancelResult> {
    const { store, clock, hooks } = this.deps;
    const result = await store.cancelJob(id, kept === undefined ? { now: clock.now() } : { reason: kept, now: clock.now() });
    if (!result) throw new JobNotFoundError(id);
    const { outcome, job } = result;
    if (outcome === 'cancelled') {
      // A job cancelled while it waited for a wait token waits no more: its pending tokens end.
      await store.endWaitTokens(id, clock.now());
      hooks?.onCancelled?.(job, kept);
      if (job.parentId !== undefined) await this.wakeParent(job.parentId, job.id);
    } else if (outcome === 'requested') {
      hooks?.onCancelRequested?.(id, job.cancelReason);
    }
    return { cancelled: outcome !== 'unchanged', status: job.status };
  }

  /**
   * Puts a `dead` or `cancelled` job back in its queue: same id, attempts reset, runs now; its
   * steps are kept, so a workflow does not redo completed side effects. Other statuses are
   * unchanged (`retried: false`). Throws `JOB_NOT_FOUND` for an unknown id.
   */
  async retry(id: string): Promise<RetryResult> {
    const result = await this.deps.store.retryJob(jobId(id, 'retry'), this.deps.clock.now());
    if (!result) throw new JobNotFoundError(id);
    if (result.outcome === 'retried') this.deps.hooks?.onQueued?.();
    return { retried: result.outcome === 'retried', status: result.status };
  }

  /**
   * Deletes a finished job (`completed`, `dead` or `cancelled`), freeing its idempotency key.
   * Active jobs are unchanged (`removed: false`: cancel them first). Throws `JOB_NOT_FOUND` for an unknown id.
   */
  async remove(id: string): Promise<RemoveResult> {
    const result = await this.deps.store.removeJob(jobId(id, 'remove'), this.deps.clock.now());
    if (!result) throw new JobNotFoundError(id);
    return { removed: result.outcome === 'removed', status: result.status };
  }

  /**
   * Makes a delayed `queued` job (a later `runAt`, or a retry's backoff) due now, so the next claim
   * of any engine may take it. Unchanged (`due: false`): a job already due, one asleep in a workflow
   * (`ctx.sleep`: woken early it would only sleep again), and every other status. Throws
   * `JOB_NOT_FOUND` for an unknown id.
   */
  async runNow(id: string): Promise<RunNowResult> {
    const result = await this.deps.store.runJobNow(jobId(id, 'runNow'), this.deps.clock.now());
    if (!result) throw new JobNotFoundError(id);
    if (result.outcome === 'due') this.deps.hooks?.onQueued?.();
    return { due: result.outcome === 'due', status: result.status };
  }

  /**
   * `jobs.cancel` for many jobs: the ids given, or every job matching a `jobs.list` filter (read
   * 500 at a time, only in the statuses a cancel applies to). Each job is cancelled as `jobs.cancel`
   * does (a running one's cancel is requested; its parent is told); one that changed state since it
   * was read is skipped, never forced. With `dryRun` nothing changes and the counts say what would.
   *
   * ```ts
   * const preview = await loom.jobs.cancelMany({ filter: { queue: 'emails', status: 'queued' } }, { dryRun: true });
   * const done = await loom.jobs.cancelMany({ filter: { queue: 'emails', status: 'queued' } }, { reason: 'bad template' });
   * // done = { matched, changed, skipped, skippedBy: [{ reason, count, ids }], sample, ... }
   * ```
   */
  cancelMany(target: BulkTarget, options: BulkCancelOptions = {}): Promise<BulkResult> {
    return this.bulk.run('cancel', target, options, 'cancelMany');
  }

  /** `jobs.retry` for many jobs (ids or a filter; dead and cancelled ones are retried), as {@link cancelMany}. */
  retryMany(target: BulkTarget, options: BulkOptions = {}): Promise<BulkResult> {
    return this.bulk.run('retry', target, options, 'retryMany');
  }

  /** `jobs.remove` for many jobs (ids or a filter; finished ones are removed), as {@link cancelMany}. */
  removeMany(target: BulkTarget, options: BulkOptions = {}): Promise<BulkResult> {
    return this.bulk.run('remove', target, options, 'removeMany');
  }

  /** `jobs.runNow` for many jobs (ids or a filter; delayed queued ones become due), as {@link cancelMany}. */
  runNowMany(target: BulkTarget, options: BulkOptions = {}): Promise<BulkResult> {
    return this.bulk.run('runNow', target, options, 'runNowMany');
  }

  /**
   * Removes the jobs that finished before `olderThan` (`completed` ones unless `status` says
   * otherwise), each as `jobs.remove` does. It walks the jobs of those statuses created before
   * `olderThan` (from the list index, 500 at a time) and removes those that also finished before
   * it, so its cost is one summary read per such job. With `dryRun` nothing changes.
   *
   * ```ts
   * const { changed } = await loom.jobs.clean({ olderThan: new Date(Date.now() - 7 * 86_400_000) });
   * ```
   */
  clean(options: CleanOptions): Promise<BulkResult> {
    return this.bulk.clean(options);
  }

  /**
   * A new job that runs `id` again from step `fromStep`: it keeps the completed steps the original
   * recorded before `fromStep` (so a charge that succeeded is not made again) and runs the rest,
   * with `payload` instead of the original's when given. The original, in whatever status, is
   * unchanged. The fork has the original's name, queue, priority and attempts, no idempotency
   * key, and `forkedFrom: id`. Throws `JOB_NOT_FOUND` for an unknown id and `INVALID_ARGUMENT`
   * when the job recorded no step named `fromStep`.
   *
   * ```ts
   * const { id: forkId } = await loom.jobs.fork(id, { fromStep: 'ship' }); // the shipping bug is fixed
   * ```
   */
  async fork(id: string, options: ForkOptions): Promise<ForkResult> {
    const { store, clock, hooks } = this.deps;
    jobId(id, 'fork');
    if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('jobs.fork options', 'must be { fromStep, payload? }; nothing changed');
    const fromStep = plainString(options.fromStep, 'jobs.fork fromStep');
    const job = await store.getJob(id);
    if (!job) throw new JobNotFoundError(id);
    const steps = stepsBefore(job, fromStep);
    const payload = 'payload' in options ? options.payload : job.payload;
    const problem = findPlainDataProblem(payload, Number.POSITIVE_INFINITY);
    if (problem) throw new NotPlainDataError('The payload of jobs.fork', problem.path, problem.reason);
    const tooLarge = payloadTooLarge(`The payload of jobs.fork(${id})`, payload, payloadLimitsOf(store));
    if (tooLarge) throw tooLarge;
    const now = clock.now();
    const [result] = await store.enqueue(
      [
        {
          name: job.name,
          queue: job.queue,
          payload,
          priority: job.priority,
          runAt: now,
          maxAttempts: job.maxAttempts,
          steps,
          forkedFrom: job.id,
          ...(job.rateLimitKey !== undefined ? { rateLimitKey: job.rateLimitKey } : {}),
          ...(job.groupKey !== undefined ? { groupKey: job.groupKey } : {}),
        },
      ],
      { now },
    );
    hooks?.onQueued?.();
    return { id: result!.id, keptSteps: steps.map((s) => s.name) };
  }

  /**
   * The run record of a job (also a dead one): payload, recorded steps, sleeps, waits, pending
   * signals and errors, as `loom jobs export ID` writes it, for `replayRun` of `@loom/testing`.
   * Throws `JOB_NOT_FOUND` for an unknown id.
   */
  async export(id: string): Promise<RunRecord> {
    const job = await this.deps.store.getJob(jobId(id, 'export'));
    if (!job) throw new JobNotFoundError(id);
    return exportRun(job, this.deps.clock.now());
  }

  /** A cancelled child decides its parent's `waitForJob`: wake the parent now (else it looks again within minutes). */
  private async wakeParent(parentId: string, childId: string): Promise<void> {
    const { store, clock, logger, hooks } = this.deps;
    try {
      await wakeIfJobsFinished({ store, clock, onWoken: () => hooks?.onQueued?.() }, parentId, { id: childId, dead: true });
    } catch (err) {
      logger?.error(
        { err, jobId: parentId, childId },
        `Job ${parentId}: could not wake it after its child ${childId} was cancelled; it looks at its children again within minutes`,
      );
    }
  }
}
