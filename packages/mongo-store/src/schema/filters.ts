import type { Document, Filter, ObjectId, Sort } from 'mongodb';
import {
  isFenced,
  LIFECYCLE,
  MAX_PENDING_SIGNALS,
  refusedAfterCancelRequest,
  type ClaimRequest,
  type DeadLetterFilter,
  type JobFilter,
  type JobPagePosition,
  type JobPageQuery,
  type JobStatus,
  type TransitionName,
  payloadMatchProblem,
} from '@loom/core';
import { StoreArgumentError } from '../store-errors.js';
import { requireDate, requireString, requireStrings } from '../arguments.js';
import type { DeadLetterDocument, JobDocument, ScheduleDocument } from './documents.js';

/**
 * Pure builders of every filter the store sends. Caller values are type-checked and placed in
 * fixed `$eq`/`$in` positions; they are never spread into a filter, so `{ "$ne": null }` sent as an
 * id or key is refused instead of matching other jobs.
 */

/** The claimable states; every other state has no `claimAt`. */
const CLAIMABLE: JobStatus[] = ['queued', 'running', 'waiting'];

/** Claim order: priority descending, then run time, then enqueue order (ObjectIds grow). */
export const CLAIM_SORT: Sort = { priority: -1, runAt: 1, _id: 1 };

/** The names a claim may take: `names` less `excludeNames`, each once. */
export function claimableNames(req: Pick<ClaimRequest, 'names' | 'excludeNames'>): string[] {
  const excluded = new Set(req.excludeNames === undefined ? [] : requireStrings(req.excludeNames, 'claim excludeNames'));
  return [...new Set(requireStrings(req.names, 'claim names'))].filter((name) => !excluded.has(name));
}

/**
 * Jobs claimable at `now`: queued and due, running with an expired lease, or waiting past its
 * timeout. Queues and names are both lists of points: the claim index leads with them, so jobs of
 * excluded or unknown names are never scanned, let alone fetched (see `CLAIM_INDEX_KEY`).
 */
export function claimFilter(req: Pick<ClaimRequest, 'queues' | 'names' | 'excludeNames' | 'now'> & { setAside?: readonly ObjectId[] }): Filter<JobDocument> {
  const filter: Filter<JobDocument> = {
    claimAt: { $lte: requireDate(req.now, 'claim now') },
    queue: { $in: requireStrings(req.queues, 'claim queues') },
    name: { $in: claimableNames(req) },
    status: { $in: CLAIMABLE },
  };
  // Jobs an open transaction holds (see held-jobs.ts): left out, so the claim does not wait on them.
  if (req.setAside !== undefined && req.setAside.length > 0) filter._id = { $nin: [...req.setAside] };
  return filter;
}

/**
 * One candidate of a batch claim, re-checked by the update that takes it: still claimable at
 * `now`. `claimAt <= now` alone says so, because `claimAt` is set exactly while a job can become
 * claimable (only in the states of {@link CLAIMABLE}, see `updates.ts`) and a job's queue and name
 * never change, so the candidate read by {@link claimFilter} still has those it was read with.
 */
export function claimCandidateFilter(req: Pick<ClaimRequest, 'now'>, id: ObjectId): Filter<JobDocument> {
  return { _id: id, claimAt: { $lte: requireDate(req.now, 'claim now') } };
}

/** {@link claimCandidateFilter} for all of a round's candidates at once: each still claimable at `now`. */
export function claimRoundFilter(req: Pick<ClaimRequest, 'now'>, ids: ObjectId[]): Filter<JobDocument> {
  return { _id: { $in: ids }, claimAt: { $lte: requireDate(req.now, 'claim now') } };
}

/** Extra conditions a fenced write can carry on top of its row's fence. */
export interface FenceConditions {
  /** Only if no step of this name is recorded yet (steps are first-write-wins). */
  absentStep?: string;
  /** Only if a `pending` step of this name is recorded (a sleep or wait being replaced). */
  pendingStep?: string;
  /** Only if no signal of this name is stored (a wait must not miss an early signal). */
  absentSignal?: string;
  /** Only if this stored signal (by store id) is still on the job. */
  signalId?: ObjectId;
  /**
   * Only if no cancel was requested, even for a row a requested cancel does not stop: a bulk of
   * heartbeats cannot tell which job had one, so such a job takes the heartbeat of its own.
   */
  noCancelRequested?: boolean;
  /**
   * Only if the lease has not run out at this instant (a heartbeat): an expired lease is over even
   * if nobody took the job yet, since its flow slot may have gone to another run meanwhile.
   */
  unexpiredAt?: Date;
}

/**
 * What a fence guards: a transition of `LIFECYCLE` that a lease fences (`isFenced`; any other
 * throws, a defect of the caller), or `'holds'`, the lease rule alone
 * (`holdsLease`: running under the token, a cancel requested or not), for the reads that ask
 * whether a lease still holds (why a write was refused, the end of an interrupted dead-letter move).
 */
export type FenceName = TransitionName | 'holds';

/** The statuses `name` may start from, as a condition: the lease rule's `running` for `'holds'`. */
function fencedStatus(name: FenceName): JobStatus | { $in: JobStatus[] } {
  if (name === 'holds') return 'running';
  const { from } = LIFECYCLE[name];
  if (!isFenced(name) || from.length === 0) throw new Error(`fencedFilter: ${name} is not a fenced transition (see LIFECYCLE)`);
  return from.length === 1 ? from[0]! : { $in: [...from] };
}

/**
 * The fence of every write after a claim, as MongoDB states `holdsLease` and the row `name` of
 * `LIFECYCLE`: this job, in a status the row starts from (`running`), under this lease token, and
 * no cancel requested where a requested cancel refuses the row. Zero matches means the lease was
 * lost (or a condition failed), and the write changes nothing. The one place the rule is a filter.
 */
export function fencedFilter(name: FenceName, id: ObjectId, token: unknown, conditions: FenceConditions = {}): Filter<JobDocument> {
  const filter: Filter<JobDocument> = { _id: id, 'lease.token': { $eq: requireString(token, 'lease token') }, status: fencedStatus(name) };
  if ((name !== 'holds' && refusedAfterCancelRequest(name)) || conditions.noCancelRequested === true) filter.cancelRequestedAt = { $exists: false };
  if (conditions.absentStep !== undefined) filter['steps.name'] = { $ne: requireString(conditions.absentStep, 'step name') };
  if (conditions.pendingStep !== undefined) {
    filter.steps = { $elemMatch: { name: { $eq: requireString(conditions.pendingStep, 'step name') }, status: 'pending' } };
  }
  if (conditions.absentSignal !== undefined) filter['signals.name'] = { $ne: requireString(conditions.absentSignal, 'signal name') };
  if (conditions.signalId !== undefined) filter['signals.sid'] = conditions.signalId;
  if (conditions.unexpiredAt !== undefined) filter['lease.until'] = { $gte: conditions.unexpiredAt };
  return filter;
}

/**
 * The fence of {@link fencedFilter} for many jobs at once: each of `ids`, under one of `tokens`,
 * as the row `name` requires. As strict as one `fencedFilter` per job, because a token is unique
 * per job and claim (a random round id and the job's id, see `ClaimRound`): a job's current lease token is among `tokens` only when it is the
 * token its own item was claimed with (no other job or claim ever held it).
 */
export function fencedManyFilter(name: TransitionName, ids: ObjectId[], tokens: unknown[]): Filter<JobDocument> {
  const { _id: _one, 'lease.token': _token, ...rest } = fencedFilter(name, ids[0]!, '');
  return { _id: { $in: ids }, 'lease.token': { $in: tokens.map((token) => requireString(token, 'lease token')) }, ...rest };
}

/** A job waiting for the job `awaitedId` (among others). */
export function waitingForJobFilter(id: ObjectId, awaitedId: unknown): Filter<JobDocument> {
  return { _id: id, status: 'waiting', 'waitingFor.jobs': { $eq: requireString(awaitedId, 'awaited job id') } };
}

/**
 * Unfinished children of `parentId`. The `$type` restates the parent index's partial filter, so
 * the planner sees at once that the index holds every match.
 */
export function activeChildFilter(parentId: unknown): Filter<JobDocument> {
  return { parentId: { $eq: requireString(parentId, 'parent id'), $type: 'string' }, status: { $in: CLAIMABLE } };
}

/** A job that is waiting (for `wake`). */
export function waitingFilter(id: ObjectId): Filter<JobDocument> {
  // A job waiting for its dependencies is woken by their settle only (dependencies.ts).
  return { _id: id, status: 'waiting', 'waitingFor.dependencies': { $exists: false } };
}

/** A job waiting for the signal `name`: storing the signal also wakes it. */
export function waitingForSignalFilter(id: ObjectId, name: unknown): Filter<JobDocument> {
  return { _id: id, status: 'waiting', 'waitingFor.signal': { $eq: requireString(name, 'signal name') } };
}

/**
 * A job that has not finished and is *not* waiting for the signal `name`: the signal is only
 * stored. Excluding the waiting case closes the race where the job starts waiting between the two
 * attempts, which would otherwise leave the signal stored on a job that never wakes.
 */
export function unfinishedNotWaitingForFilter(id: ObjectId, name: unknown): Filter<JobDocument> {
  return {
    _id: id,
    status: { $in: CLAIMABLE },
    $nor: [{ status: 'waiting', 'waitingFor.signal': { $eq: requireString(name, 'signal name') } }],
  };
}

/**
 * What a job must satisfy to take one more signal: fewer than `MAX_PENDING_SIGNALS` stored, and,
 * for a signal sent with an id, none stored or taken by a run under that id.
 */
export function signalRoomConditions(signalId: string | undefined): Filter<JobDocument> {
  const conditions: Filter<JobDocument> = { [`signals.${MAX_PENDING_SIGNALS - 1}`]: { $exists: false } };
  if (signalId !== undefined) {
    conditions['signals.id'] = { $ne: requireString(signalId, 'signal id') };
    conditions['steps.signalId'] = { $ne: signalId };
  }
  return conditions;
}

/** Jobs holding any of these idempotency keys. */
export function idempotencyKeysFilter(keys: string[]): Filter<JobDocument> {
  return { idempotencyKey: { $in: requireStrings(keys, 'idempotency keys') } };
}

/** `listJobs`: every field optional, combined with AND. */
export function jobListFilter(filter: JobFilter): Filter<JobDocument> {
  const out: Filter<JobDocument> = {};
  if (filter.name !== undefined) out.name = { $eq: requireString(filter.name, 'filter.name') };
  if (filter.queue !== undefined) out.queue = { $eq: requireString(filter.queue, 'filter.queue') };
  if (filter.status !== undefined) out.status = { $in: requireStrings(filter.status, 'filter.status') as JobStatus[] };
  if (filter.parentId !== undefined) out.parentId = { $eq: requireString(filter.parentId, 'filter.parentId') };
  if (filter.idempotencyKey !== undefined) {
    out.idempotencyKey = { $eq: requireString(filter.idempotencyKey, 'filter.idempotencyKey') };
  }
  if (filter.scheduledBefore !== undefined) out.scheduledFor = { $lt: requireDate(filter.scheduledBefore, 'filter.scheduledBefore') };
  return out;
}

/** The statuses whose jobs live in the jobs collection (dead ones are in the dead letters). */
export const LIVE_STATUSES: JobStatus[] = ['queued', 'running', 'waiting', 'completed', 'cancelled'];

/**
 * Keyset condition on `(createdAt, _id)` descending: strictly after `after`. The bound on
 * `createdAt` narrows the index scan; the `$nor` only drops the few jobs created in the same ms.
 */
function afterPosition(createdAtField: string, after: JobPagePosition, id: ObjectId): Filter<Document> {
  const createdAt = requireDate(after.createdAt, 'cursor createdAt');
  return { [createdAtField]: { $lte: createdAt }, $nor: [{ [createdAtField]: createdAt, _id: { $gte: id } }] };
}

/** Creation-time bounds of a page query, plus its keyset position. */
function createdRange(field: string, query: JobPageQuery, after: ObjectId | undefined): Filter<Document> {
  const bounds: Record<string, Date> = {};
  if (query.createdAfter !== undefined) bounds.$gt = requireDate(query.createdAfter, 'createdAfter');
  if (query.createdBefore !== undefined) bounds.$lt = requireDate(query.createdBefore, 'createdBefore');
  const parts: Filter<Document>[] = [];
  if (Object.keys(bounds).length > 0) parts.push({ [field]: bounds });
  if (query.after !== undefined && after !== undefined) parts.push(afterPosition(field, query.after, after));
  return parts.length === 0 ? {} : parts.length === 1 ? parts[0] : { $and: parts };
}

/**
 * The idempotency key and payload conditions of a page query, on the fields under `prefix` (`''`
 * for jobs, `'job.'` for dead letters). Each path is checked again here: it becomes a filter key,
 * so only names of letters, digits, `_` and `-` joined by dots get in; values sit under `$eq`.
 */
function keyAndPayload(query: JobPageQuery, prefix: string): Filter<Document> {
  const out: Filter<Document> = {};
  // `$type` makes the query imply the partial key indexes' filter, so they can be hinted.
  if (query.idempotencyKey !== undefined) out[`${prefix}idempotencyKey`] = { $eq: requireString(query.idempotencyKey, 'idempotencyKey'), $type: 'string' };
  if (query.payload !== undefined) {
    if (!Array.isArray(query.payload)) throw new StoreArgumentError('payload must be an array of { path, value }');
    for (const match of query.payload) {
      const problem = payloadMatchProblem(match);
      if (problem !== undefined) throw new StoreArgumentError(`payload ${problem}`);
      const field = `${prefix}payload.${match.path}`;
      // Two conditions on one path both hold (AND), as in MemoryStore.
      out.$and = [...((out.$and as Filter<Document>[] | undefined) ?? []), { [field]: { $eq: match.value } }];
    }
  }
  return out;
}

/** A page of live jobs (see `JobStore.listJobPage`); `statuses` are the live ones asked for. */
export function jobPageFilter(query: JobPageQuery, statuses: JobStatus[], after: ObjectId | undefined): Filter<JobDocument> {
  const out: Filter<Document> = { status: { $in: requireStrings(statuses, 'statuses') } };
  if (query.name !== undefined) out.name = { $eq: requireString(query.name, 'name') };
  if (query.queue !== undefined) out.queue = { $eq: requireString(query.queue, 'queue') };
  return withAnd(out, keyAndPayload(query, ''), createdRange('createdAt', query, after)) as Filter<JobDocument>;
}

/** A page of dead letters, in the order of their jobs' creation. */
export function deadLetterPageFilter(query: JobPageQuery, after: ObjectId | undefined): Filter<DeadLetterDocument> {
  const out: Filter<Document> = {};
  if (query.name !== undefined) out.name = { $eq: requireString(query.name, 'name') };
  if (query.queue !== undefined) out.queue = { $eq: requireString(query.queue, 'queue') };
  return withAnd(out, keyAndPayload(query, 'job.'), createdRange('job.createdAt', query, after)) as Filter<DeadLetterDocument>;
}

/** Merges filters whose keys differ, except `$and`, whose clauses are joined. */
function withAnd(...parts: Filter<Document>[]): Filter<Document> {
  const out: Filter<Document> = {};
  const and: Filter<Document>[] = [];
  for (const part of parts) {
    for (const [key, value] of Object.entries(part) as [string, unknown][]) {
      if (key === '$and') and.push(...(value as Filter<Document>[]));
      else out[key] = value;
    }
  }
  if (and.length > 0) out.$and = and;
  return out;
}

/** List order of job pages. */
export const JOB_PAGE_SORT: Sort = { createdAt: -1, _id: -1 };
/** List order of job pages over dead letters. */
export const DEAD_LETTER_PAGE_SORT: Sort = { 'job.createdAt': -1, _id: -1 };

/** Dead letters by name, queue and death time. */
export function deadLetterFilter(filter: DeadLetterFilter): Filter<DeadLetterDocument> {
  const out: Filter<DeadLetterDocument> = {};
  if (filter.name !== undefined) out.name = { $eq: requireString(filter.name, 'filter.name') };
  if (filter.queue !== undefined) out.queue = { $eq: requireString(filter.queue, 'filter.queue') };
  if (filter.before !== undefined) out.diedAt = { $lt: requireDate(filter.before, 'filter.before') };
  return out;
}

/** The compare-and-set of a schedule's last fire time. */
export function scheduleCasFilter(name: unknown, expected: Date | null): Filter<ScheduleDocument> {
  const lastFireAt = expected === null ? null : requireDate(expected, 'expected lastFireAt');
  return { _id: requireString(name, 'schedule name'), lastFireAt: { $eq: lastFireAt } };
}
