import type { ClientSession, Collection, Document, Filter, ObjectId, UpdateFilter } from 'mongodb';
import {
  compareListOrder,
  JOB_STATUSES,
  LoomError,
  type CancelOutcome,
  type DeadLetter,
  type DeadLetterFilter,
  type DeadLetterReplayReport,
  type FlowHeldBy,
  type JobPageQuery,
  type JobStatus,
  type JobSummary,
  type RemoveOutcome,
  type RetryOutcome,
  type RunNowOutcome,
} from '@loom/core';
import { listLimit, parseJobId, requireDate, requireNumber, requireString, requireStrings } from '../arguments.js';
import { withSession, type StoreCollections } from '../connection/collections.js';
import { purgeNewestDeadLetters, replayDeadLetter, type MoveContext } from '../dead-letters/dead-letters.js';
import type { DeadLetterDocument, JobDocument } from '../schema/documents.js';
import { MAX_CONDITIONAL_ROUNDS } from '../writes/fenced-writes.js';
import { DEAD_LETTER_PAGE_SORT, deadLetterFilter, deadLetterPageFilter, JOB_PAGE_SORT, jobPageFilter, LIVE_STATUSES } from '../schema/filters.js';
import { DEAD_LETTER_INDEX, IDEMPOTENCY_INDEX, JOB_LIST_INDEX } from '../schema/indexes.js';
import { LIFECYCLE_TO } from '../schema/updates.js';
import { DEAD_LETTER_SUMMARY_PROJECTION, JOB_SUMMARY_PROJECTION, toDeadJobSummary, toDeadLetter, toJobSummaryOf } from '../schema/records.js';
import { StoreArgumentError, tooManyRounds } from '../store-errors.js';

/**
 * The operations that find and steer jobs from outside a run (`loom.jobs`, the `loom` command
 * line): list pages, cancel, retry, remove, bulk replay. Each is one conditional write (or a short
 * loop of them when it races a transition), never a read-then-write.
 */

/** `queued`/`waiting` (or `running` under an expired lease) → `cancelled`. */
function cancelledUpdate(reason: string | undefined, now: Date): UpdateFilter<JobDocument> {
  const set: Partial<JobDocument> = { status: LIFECYCLE_TO.cancel, finishedAt: now, updatedAt: now };
  if (reason !== undefined) set.cancelReason = reason;
  // A cancelled job no longer takes the debounced enqueues of its key.
  return { $set: set, $unset: { lease: '', claimAt: '', waitingFor: '', debounceKey: '' } };
}

/** The lease holder ends a job whose cancel was requested. */
export function completeCancelUpdate(now: Date): UpdateFilter<JobDocument> {
  return cancelledUpdate(undefined, now);
}

/**
 * `cancelled` → `queued` now, attempts reset into `priorAttempts` (so the error history numbers
 * on); steps and errors kept. A pipeline update: the new `priorAttempts` is computed from the
 * stored `attempt` in the same atomic write.
 */
export function retryCancelledUpdate(now: Date): Document[] {
  return [
    {
      $set: {
        priorAttempts: { $add: [{ $ifNull: ['$priorAttempts', 0] }, '$attempt'] },
        status: LIFECYCLE_TO.retryJob,
        attempt: 0,
        runAt: { $literal: now },
        claimAt: { $literal: now },
        updatedAt: { $literal: now },
      },
    },
    { $unset: ['finishedAt', 'cancelReason', 'cancelRequestedAt', 'lease'] },
  ];
}

/** The summary fields plus what `heldBy` needs (the job's flow keys). */
const FLOW_SUMMARY_PROJECTION = { ...JOB_SUMMARY_PROJECTION, groupKey: 1, rateLimitKey: 1 };

/** How many dead letters a bulk replay reads per batch (and reports progress after). */
const REPLAY_BATCH = 500;

/** The index answering a dead-letter filter in death order: by name, by queue, or all. */
export function deadLetterIndexFor(filter: DeadLetterFilter): string {
  return filter.name !== undefined ? DEAD_LETTER_INDEX.nameDied : filter.queue !== undefined ? DEAD_LETTER_INDEX.queueDied : DEAD_LETTER_INDEX.died;
}

export class JobControl {
  constructor(
    private readonly collections: StoreCollections,
    private readonly moveContext: () => Promise<MoveContext>,
    /** What holds back due queued jobs of a page (flow control; see `FlowPermits.heldBy`). */
    private readonly heldBy: (docs: JobDocument[], now: Date) => Promise<(FlowHeldBy | undefined)[]> = async (docs) => docs.map(() => undefined),
  ) {}

  private get jobs(): Collection<JobDocument> {
    return this.collections.jobs;
  }

  private get deadLetters(): Collection<DeadLetterDocument> {
    return this.collections.deadLetters;
  }

  /**
   * One page: at most `limit` live jobs and `limit` dead letters, each read in list order from an
   * index range that starts at the cursor, merged. Only summary fields are fetched.
   */
  async listJobPage(query: JobPageQuery): Promise<JobSummary[]> {
    const limit = requireNumber(query?.limit, 'limit', true);
    if (limit < 1) throw new StoreArgumentError(`limit must be >= 1, got ${limit}`);
    const statuses = requireStrings(query.statuses, 'statuses') as JobStatus[];
    const unknown = statuses.find((s) => !JOB_STATUSES.includes(s));
    if (unknown !== undefined) throw new StoreArgumentError(`unknown status ${JSON.stringify(unknown)}`);
    let after: ObjectId | undefined;
    if (query.after !== undefined) {
      after = parseJobId(query.after.id, 'cursor id') ?? undefined;
      if (!after) throw new StoreArgumentError('the cursor does not come from this store (its job id is not a MongoStore id)');
    }
    const live = statuses.filter((s) => LIVE_STATUSES.includes(s));
    // A key search is one lookup in the key indexes; payload conditions are checked on the documents
    // the list index range yields (unindexed: see `JobListFilter.payload`).
    const byKey = query.idempotencyKey !== undefined;
    const liveIndex = byKey
      ? IDEMPOTENCY_INDEX
      : query.name !== undefined
        ? JOB_LIST_INDEX.name
        : query.queue !== undefined
          ? JOB_LIST_INDEX.queue
          : JOB_LIST_INDEX.status;
    const deadIndex = byKey
      ? DEAD_LETTER_INDEX.key
      : query.name !== undefined
        ? DEAD_LETTER_INDEX.nameCreated
        : query.queue !== undefined
          ? DEAD_LETTER_INDEX.queueCreated
          : DEAD_LETTER_INDEX.created;
    const [liveJobs, deadJobs] = await Promise.all([
      live.length === 0
        ? []
        : this.jobs
            .find(jobPageFilter(query, live, after), {
              sort: JOB_PAGE_SORT,
              limit,
              projection: query.now === undefined ? JOB_SUMMARY_PROJECTION : FLOW_SUMMARY_PROJECTION,
              hint: liveIndex,
            })
            .toArray(),
      !statuses.includes('dead')
        ? []
        : this.deadLetters
            .find(deadLetterPageFilter(query, after), { sort: DEAD_LETTER_PAGE_SORT, limit, projection: DEAD_LETTER_SUMMARY_PROJECTION, hint: deadIndex })
            .toArray(),
    ]);
    const liveDocs = liveJobs as JobDocument[];
    const held = query.now === undefined ? [] : await this.heldBy(liveDocs, requireDate(query.now, 'now'));
    const summaries = [
      ...liveDocs.map((doc, i) => {
        const summary = toJobSummaryOf(doc);
        if (held[i] !== undefined) summary.heldBy = held[i];
        return summary;
      }),
      ...deadJobs.map((doc) => toDeadJobSummary(doc as DeadLetterDocument)),
    ];
    return summaries.sort(compareListOrder).slice(0, limit);
  }

  /** `session`: the transaction that also moves a batch member's counts (see batches/batches.ts). */
  async cancelJob(id: string, req: { reason?: string; now: Date }, session?: ClientSession): Promise<CancelOutcome | null> {
    const _id = parseJobId(id);
    const now = requireDate(req?.now, 'now');
    const reason = req.reason === undefined ? undefined : requireString(req.reason, 'cancel reason');
    if (!_id) return null;
    const options = { returnDocument: 'after' as const, projection: JOB_SUMMARY_PROJECTION, ...withSession(session) };
    for (let round = 0; round < MAX_CONDITIONAL_ROUNDS; round++) {
      // Not running, or running under a lease that has already expired (its holder is presumed dead).
      const cancellable = { $or: [{ status: { $in: ['queued', 'waiting'] } }, { status: 'running', 'lease.until': { $lt: now } }] } as Filter<JobDocument>;
      const cancelled = await this.jobs.findOneAndUpdate({ _id, ...cancellable }, cancelledUpdate(reason, now), options);
      if (cancelled) return { outcome: 'cancelled', job: toJobSummaryOf(cancelled) };
      const request: UpdateFilter<JobDocument> = {
        $set: { cancelRequestedAt: now, updatedAt: now, ...(reason === undefined ? {} : { cancelReason: reason }) },
      };
      const requested = await this.jobs.findOneAndUpdate({ _id, status: 'running', cancelRequestedAt: { $exists: false } }, request, options);
      if (requested) return { outcome: 'requested', job: toJobSummaryOf(requested) };
      const current = await this.jobs.findOne({ _id }, { projection: JOB_SUMMARY_PROJECTION, ...withSession(session) });
      if (current?.status === 'running') return { outcome: 'requested', job: toJobSummaryOf(current) }; // requested before
      if (current && (current.status === 'completed' || current.status === 'cancelled')) return { outcome: 'unchanged', job: toJobSummaryOf(current) };
      if (!current) {
        const dead = await this.deadLetters.findOne({ _id }, { projection: DEAD_LETTER_SUMMARY_PROJECTION, ...withSession(session) });
        return dead ? { outcome: 'unchanged', job: toDeadJobSummary(dead) } : null;
      }
      // It moved between our writes (e.g. claimed after the first): look again.
    }
    throw tooManyRounds('cancelJob', id);
  }

  async retryJob(id: string, now: Date): Promise<RetryOutcome | null> {
    const _id = parseJobId(id);
    requireDate(now, 'now');
    if (!_id) return null;
    for (let round = 0; round < MAX_CONDITIONAL_ROUNDS; round++) {
      if (await this.jobs.findOneAndUpdate({ _id, status: 'cancelled' }, retryCancelledUpdate(now), { projection: { _id: 1 } })) {
        return { outcome: 'retried', status: 'queued' };
      }
      if ((await replayDeadLetter(await this.moveContext(), _id, now)) !== null) return { outcome: 'retried', status: 'queued' };
      const current = await this.jobs.findOne({ _id }, { projection: { status: 1 } });
      if (current && current.status !== 'cancelled') return { outcome: 'unchanged', status: current.status };
      if (!current && !(await this.deadLetters.findOne({ _id }, { projection: { _id: 1 } }))) return null;
    }
    throw tooManyRounds('retryJob', id);
  }

  /**
   * A delayed `queued` job due at `now` (`runJobNow`): one conditional write on the status, a later
   * `runAt` and no sleep after now, so a claim or a sleep in between leaves it as it is.
   */
  async runJobNow(id: string, now: Date): Promise<RunNowOutcome | null> {
    const _id = parseJobId(id);
    requireDate(now, 'now');
    if (!_id) return null;
    const due = await this.jobs.findOneAndUpdate(
      { _id, status: 'queued', runAt: { $gt: now }, $or: [{ sleepUntil: { $exists: false } }, { sleepUntil: { $lte: now } }] },
      { $set: { status: LIFECYCLE_TO.runJobNow, runAt: now, claimAt: now, updatedAt: now } },
      { projection: { _id: 1 } },
    );
    if (due) return { outcome: 'due', status: LIFECYCLE_TO.runJobNow };
    const current = await this.jobs.findOne({ _id }, { projection: { status: 1 } });
    if (current) return { outcome: 'unchanged', status: current.status };
    return (await this.deadLetters.findOne({ _id }, { projection: { _id: 1 } })) ? { outcome: 'unchanged', status: 'dead' } : null;
  }

  /** `removedCompleted`: told the queue and finish time of a completed job it removed (its count goes down). */
  async removeJob(id: string, now: Date, removedCompleted: (queue: string, finishedAt: Date) => void): Promise<RemoveOutcome | null> {
    const _id = parseJobId(id);
    requireDate(now, 'now');
    if (!_id) return null;
    const finished = await this.jobs.findOneAndDelete(
      { _id, status: { $in: ['completed', 'cancelled'] } },
      { projection: { status: 1, queue: 1, finishedAt: 1, heldFinishedAt: 1 } },
    );
    if (finished) {
      const finishedAt = finished.finishedAt ?? finished.heldFinishedAt;
      if (finished.status === 'completed' && finishedAt) removedCompleted(finished.queue, finishedAt);
      return { outcome: 'removed', status: finished.status };
    }
    if (await this.deadLetters.findOneAndDelete({ _id }, { projection: { _id: 1 } })) return { outcome: 'removed', status: 'dead' };
    const current = await this.jobs.findOne({ _id }, { projection: { status: 1 } });
    return current ? { outcome: 'unchanged', status: current.status } : null;
  }

  /** Replays letter by letter, reading ids in death order in batches (keyset on diedAt + _id). */
  async replayDeadLetters(filter: DeadLetterFilter, req: { now: Date; onProgress?: (handled: number) => void }): Promise<DeadLetterReplayReport> {
    const now = requireDate(req?.now, 'now');
    const where = deadLetterFilter(filter ?? {});
    const max = filter?.limit === undefined ? Infinity : Math.max(0, requireNumber(filter.limit, 'filter.limit', true));
    const hint = deadLetterIndexFor(filter ?? {});
    const report: DeadLetterReplayReport = { replayed: 0, skipped: [] };
    const ctx = await this.moveContext();
    let handled = 0;
    let last: { diedAt: Date; _id: ObjectId } | undefined;
    while (handled < max) {
      // After the last letter read: the bound on diedAt narrows the index scan, the $nor drops ties.
      const keyset: Filter<DeadLetterDocument> = last ? { diedAt: { $lte: last.diedAt }, $nor: [{ diedAt: last.diedAt, _id: { $gte: last._id } }] } : {};
      const batch = await this.deadLetters
        .find(
          { $and: [where, keyset] },
          { sort: { diedAt: -1, _id: -1 }, limit: Math.min(REPLAY_BATCH, max - handled), projection: { _id: 1, diedAt: 1 }, hint },
        )
        .toArray();
      if (batch.length === 0) break;
      for (const letter of batch) {
        try {
          if ((await replayDeadLetter(ctx, letter._id, now)) !== null) report.replayed += 1;
        } catch (error) {
          if (!LoomError.is(error, 'INVALID_ARGUMENT')) throw error;
          report.skipped.push({ id: letter._id.toHexString(), reason: error.message });
        }
      }
      handled += batch.length;
      last = batch[batch.length - 1];
      req.onProgress?.(handled);
    }
    return report;
  }

  /** Dead letters in death order, newest first, from the index that answers the filter. */
  async listDeadLetters(filter: DeadLetterFilter): Promise<DeadLetter[]> {
    const limit = listLimit(filter?.limit);
    if (limit === 0) return [];
    const docs = await this.deadLetters
      .find(deadLetterFilter(filter ?? {}), { sort: { diedAt: -1, _id: -1 }, limit: limit ?? 0, hint: deadLetterIndexFor(filter ?? {}) })
      .toArray();
    return docs.map(toDeadLetter);
  }

  /**
   * Deletes the matching dead letters: all at once, or the newest `limit` (see `purgeNewestDeadLetters`).
   * `withValues` is told first the ids of matching letters with offloaded values (some may then be
   * left by the limit: their files stay referenced), whose files the caller deletes after.
   */
  async purgeDeadLetters(filter: DeadLetterFilter, withValues?: (ids: ObjectId[]) => void): Promise<number> {
    const where = deadLetterFilter(filter ?? {});
    const limit = listLimit(filter?.limit);
    if (withValues && limit !== 0) {
      const offloaded = { $or: [{ 'job.payloadRef': { $exists: true } }, { 'job.resultRef': { $exists: true } }] };
      withValues((await this.deadLetters.find({ $and: [where, offloaded] }, { projection: { _id: 1 } }).toArray()).map((d) => d._id));
    }
    if (limit === undefined) return (await this.deadLetters.deleteMany(where)).deletedCount;
    if (limit === 0) return 0;
    return purgeNewestDeadLetters(this.deadLetters, where, limit, deadLetterIndexFor(filter ?? {}));
  }
}
