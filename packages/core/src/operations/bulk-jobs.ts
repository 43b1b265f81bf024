import { InvalidArgumentError, LoomError } from '../support/errors.js';
import type { Clock } from '../support/clock.js';
import { JOB_STATUSES, type JobStatus } from '../store/job-record.js';
import { LIFECYCLE, allows, type TransitionName } from '../store/lifecycle.js';
import { toJobSummary, type JobPagePosition, type JobPageQuery, type JobSummary } from '../store/operations.js';
import type { JobStore } from '../store/store.js';
import { toPageQuery, type JobListFilter } from './job-list-filter.js';
import { plainString } from './plain-string.js';

/** A bulk action of `loom.jobs`: each one is its single action (`jobs.cancel`, `jobs.retry`, `jobs.remove`, `jobs.runNow`) applied job by job. */
export type BulkAction = 'cancel' | 'retry' | 'remove' | 'runNow';

/**
 * Which jobs a bulk action covers: a list of ids (at most {@link MAX_BULK_IDS}), or every job
 * matching a `jobs.list` filter (without `limit` and `cursor`: the action walks every page).
 */
export type BulkTarget = { ids: readonly string[] } | { filter: Omit<JobListFilter, 'limit' | 'cursor'> };

/** Options of every bulk action. */
export interface BulkOptions {
  /** Change nothing: report what the action would change, from each job's status now. */
  dryRun?: boolean;
}

/** Options of `jobs.cancelMany`: those of `jobs.cancel`, and a dry run. */
export interface BulkCancelOptions extends BulkOptions {
  reason?: string;
  children?: boolean;
}

/** Jobs a bulk action left as they were, for one reason. */
export interface BulkSkip {
  /** Why, in words: `"completed: cancel applies to queued, waiting, running"`, `"no job has this id"`, ... */
  reason: string;
  count: number;
  /** The first ids skipped for this reason (at most {@link BULK_SAMPLE}). */
  ids: string[];
}

/** What a bulk action did (or, with `dryRun`, would do). */
export interface BulkResult {
  action: BulkAction;
  dryRun: boolean;
  /**
   * Jobs it looked at: with ids, those that exist (unknown ids are skipped); with a filter, the
   * jobs matching it in a status the action applies to (other statuses are not read).
   */
  matched: number;
  /** Jobs it changed (a running job's cancel counts once requested); with `dryRun`, would change. */
  changed: number;
  /** Of `changed`, running jobs whose cancel was requested (the engine running each ends it). Cancel only. */
  requested?: number;
  /** With `{ children: true }`: children and dependents cancelled as well. Cancel only. */
  cascaded?: number;
  /** `matched` - `changed` (+ unknown ids). */
  skipped: number;
  /** The skipped jobs by reason. */
  skippedBy: BulkSkip[];
  /** The first jobs changed (or that would change), at most {@link BULK_SAMPLE}, in the order handled. */
  sample: JobSummary[];
}

/** Options of `jobs.clean`. */
export interface CleanOptions {
  /** Removes jobs that finished strictly before this instant. */
  olderThan: Date;
  /** The finished statuses to remove. @default 'completed' */
  status?: CleanStatus | readonly CleanStatus[];
  /** Only jobs of this name. */
  name?: string;
  /** Only jobs of this queue. */
  queue?: string;
  dryRun?: boolean;
}

/** A status `jobs.clean` removes. */
export type CleanStatus = 'completed' | 'dead' | 'cancelled';

/** At most this many ids per bulk call (a dashboard page holds at most 500). */
export const MAX_BULK_IDS = 1_000;
/** Jobs read per store call while walking a filter. */
export const BULK_BATCH = 500;
/** How many jobs a result lists per skip reason and in `sample`. */
export const BULK_SAMPLE = 20;

/** The single actions a bulk action applies; `null` when the job is gone. */
export interface SingleActions {
  cancel(id: string, options: { reason?: string; children?: boolean }): Promise<{ cancelled: boolean; status: JobStatus; cascaded?: number } | null>;
  retry(id: string): Promise<{ retried: boolean; status: JobStatus } | null>;
  remove(id: string): Promise<{ removed: boolean; status: JobStatus } | null>;
  runNow(id: string): Promise<{ due: boolean; status: JobStatus } | null>;
}

/** The lifecycle rows each action makes (the table says from which statuses). */
const ROWS: Record<BulkAction, TransitionName[]> = {
  cancel: ['cancel', 'requestCancel'],
  retry: ['retryJob'],
  remove: ['removeJob'],
  runNow: ['runJobNow'],
};

const LABEL: Record<BulkAction, string> = { cancel: 'cancel', retry: 'retry', remove: 'remove', runNow: 'run now' };

/** The statuses `action` may start from, per the lifecycle table. */
export function bulkStatuses(action: BulkAction): JobStatus[] {
  return JOB_STATUSES.filter((status) => ROWS[action].some((row) => allows(row, status)));
}

function statusReason(action: BulkAction, status: JobStatus): string {
  return `${status}: ${LABEL[action]} applies to ${bulkStatuses(action).join(', ')}`;
}

const REASON = {
  notFound: 'no job has this id',
  gone: 'removed meanwhile',
  requested: 'running: its cancel was requested already',
  due: 'queued: already due',
  asleep: 'queued: asleep in a workflow (woken early it would sleep again)',
  refused: (message: string) => `refused: ${message}`,
};

/** Counts a result as it is made. */
class Tally {
  readonly result: BulkResult;
  private readonly skips = new Map<string, BulkSkip>();

  constructor(action: BulkAction, dryRun: boolean) {
    this.result = { action, dryRun, matched: 0, changed: 0, skipped: 0, skippedBy: [], sample: [] };
    if (action === 'cancel') this.result.requested = 0;
  }

  changed(job: JobSummary): void {
    this.result.changed += 1;
    if (this.result.sample.length < BULK_SAMPLE) this.result.sample.push(job);
  }

  skip(id: string, reason: string): void {
    this.result.skipped += 1;
    let entry = this.skips.get(reason);
    if (!entry) {
      entry = { reason, count: 0, ids: [] };
      this.skips.set(reason, entry);
      this.result.skippedBy.push(entry);
    }
    entry.count += 1;
    if (entry.ids.length < BULK_SAMPLE) entry.ids.push(id);
  }
}

/**
 * What `action` would do to `job` at `now`, from its summary: `undefined` when it would change it,
 * else why not. The same conditions the store's write checks, so a dry run predicts it.
 */
function wouldSkip(action: BulkAction, job: JobSummary, now: Date): string | undefined {
  if (!bulkStatuses(action).includes(job.status)) return statusReason(action, job.status);
  if (action === 'cancel' && job.status === 'running' && job.cancelRequestedAt !== undefined) return REASON.requested;
  if (action === 'runNow') {
    if (job.runAt.getTime() <= now.getTime()) return REASON.due;
    if (job.sleepUntil !== undefined && job.sleepUntil.getTime() > now.getTime()) return REASON.asleep;
  }
  return undefined;
}

/** Whether an unchanged job was left for a reason its status tells; else the store said why (run now). */
function unchangedReason(action: BulkAction, before: JobSummary, status: JobStatus, now: Date): string {
  if (action === 'cancel' && status === 'running') return REASON.requested;
  if (!bulkStatuses(action).includes(status)) return statusReason(action, status);
  return wouldSkip(action, { ...before, status }, now) ?? statusReason(action, status);
}

function checkedIds(ids: unknown, method: string): string[] {
  if (!Array.isArray(ids)) throw new InvalidArgumentError(`jobs.${method} ids`, 'must be an array of job ids; nothing changed');
  if (ids.length > MAX_BULK_IDS)
    throw new InvalidArgumentError(`jobs.${method} ids`, `takes at most ${MAX_BULK_IDS} ids (use a filter for more); nothing changed`);
  return [...new Set(ids.map((id) => plainString(id, `jobs.${method} ids[]`, 'nothing changed')))];
}

/** The store query of a bulk filter: checked as `jobs.list` checks it, its statuses cut to those `action` applies to. */
function filterQuery(filter: unknown, statuses: JobStatus[], method: string): JobPageQuery | undefined {
  if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) {
    throw new InvalidArgumentError(`jobs.${method} filter`, 'must be an object (a jobs.list filter); nothing changed');
  }
  for (const key of ['limit', 'cursor']) {
    if (key in filter)
      throw new InvalidArgumentError(`jobs.${method} filter.${key}`, `a bulk action covers every matching job: give no ${key}; nothing changed`);
  }
  const { query } = toPageQuery({ ...filter, limit: BULK_BATCH });
  query.statuses = query.statuses.filter((s) => statuses.includes(s));
  if (query.statuses.length === 0) return undefined;
  query.limit = BULK_BATCH;
  return query;
}

/** Every job matching `query`, a page of {@link BULK_BATCH} at a time (keyset: a job changed or removed meanwhile does not shift the next page). */
async function* walk(store: JobStore, query: JobPageQuery): AsyncGenerator<JobSummary> {
  let after: JobPagePosition | undefined;
  for (;;) {
    const page = await store.listJobPage(after === undefined ? query : { ...query, after });
    for (const job of page) yield job;
    if (page.length < query.limit) return;
    const last = page[page.length - 1]!;
    after = { createdAt: last.createdAt, id: last.id };
  }
}

/**
 * The bulk actions of `loom.jobs`. Each job goes through its single action (so its store write is
 * the lifecycle row's conditional write, and parents, batches and dependents are told as for one
 * job): a job that changed state since it was read is skipped, never forced.
 */
export class BulkJobs {
  constructor(private readonly deps: { store: JobStore; clock: Clock; single: SingleActions }) {}

  async run(action: BulkAction, target: BulkTarget, options: BulkCancelOptions, method: string): Promise<BulkResult> {
    if (typeof target !== 'object' || target === null) {
      throw new InvalidArgumentError(`jobs.${method} target`, 'must be { ids: [...] } or { filter: {...} }; nothing changed');
    }
    if (typeof options !== 'object' || options === null) throw new InvalidArgumentError(`jobs.${method} options`, 'must be an object; nothing changed');
    const dryRun = options.dryRun ?? false;
    if (typeof dryRun !== 'boolean') throw new InvalidArgumentError(`jobs.${method} dryRun`, 'must be a boolean; nothing changed');
    const hasIds = 'ids' in target;
    if (hasIds === 'filter' in target)
      throw new InvalidArgumentError(`jobs.${method} target`, 'takes ids or a filter, not both (nor neither); nothing changed');
    const tally = new Tally(action, dryRun);
    const { store } = this.deps;
    if (hasIds) {
      for (const id of checkedIds(target.ids, method)) {
        const job = await store.getJob(id);
        if (!job) tally.skip(id, REASON.notFound);
        else await this.one(action, toJobSummary(job), options, tally);
      }
    } else {
      const query = filterQuery(target.filter, bulkStatuses(action), method);
      if (query) for await (const job of walk(store, query)) await this.one(action, job, options, tally);
    }
    return tally.result;
  }

  /** Removes finished jobs that finished before `olderThan`: a walk of those created before it (they finished later or earlier), each removed as `jobs.remove`. */
  async clean(options: CleanOptions): Promise<BulkResult> {
    if (typeof options !== 'object' || options === null)
      throw new InvalidArgumentError('jobs.clean options', 'must be { olderThan, status?, dryRun? }; nothing changed');
    const { olderThan } = options;
    if (!(olderThan instanceof Date) || Number.isNaN(olderThan.getTime()))
      throw new InvalidArgumentError('jobs.clean olderThan', 'must be a valid Date; nothing changed');
    const finished = LIFECYCLE.removeJob.from;
    const statuses = options.status === undefined ? ['completed'] : typeof options.status === 'string' ? [options.status] : options.status;
    if (!Array.isArray(statuses) || statuses.length === 0 || statuses.some((s) => !finished.includes(s as JobStatus))) {
      throw new InvalidArgumentError('jobs.clean status', `must be one or more of ${finished.join(', ')}; nothing changed`);
    }
    const dryRun = options.dryRun ?? false;
    if (typeof dryRun !== 'boolean') throw new InvalidArgumentError('jobs.clean dryRun', 'must be a boolean; nothing changed');
    const filter: JobListFilter = { status: statuses as JobStatus[], createdBefore: olderThan };
    if (options.name !== undefined) filter.name = options.name;
    if (options.queue !== undefined) filter.queue = options.queue;
    const query = filterQuery(filter, [...finished], 'clean')!;
    const tally = new Tally('remove', dryRun);
    for await (const job of walk(this.deps.store, query)) {
      if (job.finishedAt === undefined || job.finishedAt.getTime() >= olderThan.getTime()) continue;
      await this.one('remove', job, {}, tally);
    }
    return tally.result;
  }

  private async one(action: BulkAction, job: JobSummary, options: BulkCancelOptions, tally: Tally): Promise<void> {
    tally.result.matched += 1;
    const now = this.deps.clock.now();
    if (tally.result.dryRun) {
      const reason = wouldSkip(action, job, now);
      if (reason !== undefined) return tally.skip(job.id, reason);
      if (action === 'cancel' && job.status === 'running') tally.result.requested! += 1;
      return tally.changed(job);
    }
    // A job the summary says the action cannot change is not written to (a run now that is due, asleep, ...).
    const early = wouldSkip(action, job, now);
    if (early !== undefined) return tally.skip(job.id, early);
    let outcome: { changed: boolean; status: JobStatus; cascaded?: number } | null;
    try {
      outcome = await this.apply(action, job.id, options);
    } catch (err) {
      // A dead job whose idempotency key another job holds now cannot be retried; say so and go on.
      if (LoomError.is(err, 'INVALID_ARGUMENT') && action === 'retry') return tally.skip(job.id, REASON.refused(err.message));
      throw err;
    }
    if (outcome === null) return tally.skip(job.id, REASON.gone);
    if (outcome.cascaded !== undefined) tally.result.cascaded = (tally.result.cascaded ?? 0) + outcome.cascaded;
    if (!outcome.changed) return tally.skip(job.id, unchangedReason(action, job, outcome.status, now));
    if (action === 'cancel' && outcome.status === 'running') tally.result.requested! += 1;
    tally.changed({ ...job, status: outcome.status });
  }

  private async apply(action: BulkAction, id: string, options: BulkCancelOptions): Promise<{ changed: boolean; status: JobStatus; cascaded?: number } | null> {
    const { single } = this.deps;
    switch (action) {
      case 'cancel': {
        const cancel: { reason?: string; children?: boolean } = {};
        if (options.reason !== undefined) cancel.reason = options.reason;
        if (options.children !== undefined) cancel.children = options.children;
        const r = await single.cancel(id, cancel);
        return r && { changed: r.cancelled, status: r.status, ...(r.cascaded !== undefined ? { cascaded: r.cascaded } : {}) };
      }
      case 'retry': {
        const r = await single.retry(id);
        return r && { changed: r.retried, status: r.status };
      }
      case 'remove': {
        const r = await single.remove(id);
        return r && { changed: r.removed, status: r.status };
      }
      case 'runNow': {
        const r = await single.runNow(id);
        return r && { changed: r.due, status: r.status };
      }
    }
  }
}
