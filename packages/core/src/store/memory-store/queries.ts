/**
 * The reads of a MemoryStore: one job, job lists (`listJobs`, and the operators' `listJobPage`),
 * per-queue counts and summaries, finished counts over a time range, and the paused queues. A
 * development store: scans and sorts are fine here; MongoStore answers these from indexes.
 */
import { LoomError } from '../../support/errors.js';
import type { FlowHeldBy } from '../flow.js';
import { payloadMatchProblem } from '../payload-match.js';
import { ACTIVE_STATUSES, type JobRecord, type StoreStats } from '../job-record.js';
import { compareListOrder, emptyQueueCounts, toJobSummary, type JobPageQuery, type JobSummary, type QueueSummary } from '../operations.js';
import type { FinishedCountQuery, JobFilter } from '../store.js';
import { assertDate, assertOptionalString } from './arguments.js';
import { clonePlain } from './clone.js';
import { matchesJobFilter, matchesJobPageQuery, takeLimit } from './filters.js';
import { copyDate, copyRecord } from './record-copy.js';
import type { MemoryState } from './state.js';
import { claimableFrom, type StoredJob } from './stored-job.js';

export function getJob(state: MemoryState, id: string): JobRecord | null {
  const job = state.find(id);
  return job ? copyRecord(job.record) : null;
}

export function listJobs(state: MemoryState, filter: JobFilter): JobRecord[] {
  const matches: StoredJob[] = [];
  for (const source of candidates(state, filter)) for (const job of source) if (matchesJobFilter(job.record, filter)) matches.push(job);
  matches.sort((a, b) => b.record.createdAt.getTime() - a.record.createdAt.getTime() || b.seq - a.seq);
  return takeLimit(matches, filter.limit).map((job) => copyRecord(job.record));
}

/** The smallest set of jobs that holds every match of `filter`. */
function candidates(state: MemoryState, filter: JobFilter): Iterable<StoredJob>[] {
  if (filter.idempotencyKey !== undefined) {
    const holder = state.keys.get(filter.idempotencyKey);
    // A dead job never holds its key, so the holder is active, completed, held or cancelled.
    const job = holder === undefined ? undefined : state.jobs.get(holder);
    return [job ? [job] : []];
  }
  if (filter.parentId !== undefined) return [state.byParent.get(filter.parentId)];
  const onlyActive = filter.status !== undefined && filter.status.every((s) => ACTIVE_STATUSES.includes(s));
  if (onlyActive) return [filter.name === undefined ? state.active.values() : state.active.named(filter.name)];
  return [state.active.values(), state.completed.values(), state.held.values(), state.cancelled.values()];
}

export function listJobPage(state: MemoryState, query: JobPageQuery): JobSummary[] {
  if (!Number.isInteger(query.limit) || query.limit < 1) {
    throw new LoomError('INVALID_ARGUMENT', `listJobPage limit must be an integer >= 1, got ${String(query.limit)}`);
  }
  assertOptionalString(query.name, 'listJobPage name');
  assertOptionalString(query.queue, 'listJobPage queue');
  assertOptionalString(query.idempotencyKey, 'listJobPage idempotencyKey');
  for (const match of query.payload ?? []) {
    const problem = payloadMatchProblem(match);
    if (problem !== undefined) throw new LoomError('INVALID_ARGUMENT', `MemoryStore: listJobPage payload ${problem}; nothing was read`);
  }
  const statuses = new Set(query.statuses);
  const sources: Iterable<StoredJob>[] = [];
  if (statuses.has('queued') || statuses.has('running') || statuses.has('waiting')) {
    sources.push(query.name === undefined ? state.active.values() : state.active.named(query.name));
  }
  if (statuses.has('completed')) sources.push(state.completed.values(), state.held.values());
  if (statuses.has('cancelled')) sources.push(state.cancelled.values());
  if (statuses.has('dead')) sources.push([...state.dead.values()].map((entry) => entry.job));
  // A development store: a scan and a sort per page is fine; MongoStore answers it from indexes.
  const matches: JobSummary[] = [];
  if (query.now !== undefined) assertDate(query.now, 'listJobPage now');
  const now = query.now?.getTime();
  for (const source of sources) {
    for (const job of source) {
      if (!matchesJobPageQuery(job.record, query)) continue;
      const summary = toJobSummary(job.record);
      const heldBy = now === undefined ? undefined : heldByAt(state, job.record, now);
      if (heldBy !== undefined) summary.heldBy = heldBy;
      matches.push(summary);
    }
  }
  matches.sort(compareListOrder);
  return matches.slice(0, query.limit).map((summary) => clonePlain(summary));
}

/** What holds a due `queued` job back at `now`, where the store knows: a paused queue, a flow limit. */
function heldByAt(state: MemoryState, record: JobRecord, now: number): FlowHeldBy | undefined {
  if (record.status !== 'queued' || record.runAt.getTime() > now) return undefined;
  if (state.paused.has(record.queue)) return 'paused';
  return state.flow.heldBy(record, now);
}

export function listQueues(state: MemoryState, now?: Date): QueueSummary[] {
  if (now !== undefined) assertDate(now, 'listQueues now');
  const queues = new Map<string, QueueSummary>();
  const summary = (name: string): QueueSummary => {
    let queue = queues.get(name);
    if (!queue) queues.set(name, (queue = { name, paused: state.paused.has(name), counts: emptyQueueCounts() }));
    return queue;
  };
  for (const [name, counts] of Object.entries(state.counts.snapshot())) Object.assign(summary(name).counts, counts);
  for (const entry of state.dead.values()) summary(entry.job.record.queue).counts.dead += 1;
  for (const name of state.paused) summary(name);
  if (now !== undefined) for (const queue of queues.values()) queue.sleeping = 0;
  for (const job of state.active.values()) {
    const { record } = job;
    if (record.status !== 'queued') continue;
    const queue = summary(record.queue);
    if (now !== undefined && record.sleepUntil !== undefined && record.sleepUntil > now) queue.sleeping = (queue.sleeping ?? 0) + 1;
    if (queue.oldestQueuedAt === undefined || record.createdAt < queue.oldestQueuedAt) queue.oldestQueuedAt = copyDate(record.createdAt);
  }
  return [...queues.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export function countFinished(state: MemoryState, req: FinishedCountQuery): number {
  if (req.status !== 'completed' && req.status !== 'dead')
    throw new LoomError('INVALID_ARGUMENT', `countFinished status must be 'completed' or 'dead', got ${JSON.stringify(req.status)}`);
  assertDate(req.from, 'countFinished from');
  assertDate(req.to, 'countFinished to');
  const inRange = (t: Date | undefined) => t !== undefined && t >= req.from && t < req.to;
  // A development store: a scan is fine; MongoStore counts an index range.
  let n = 0;
  if (req.status === 'dead') for (const entry of state.dead.values()) n += inRange(entry.diedAt) ? 1 : 0;
  else for (const job of state.completed.values()) n += inRange(job.record.finishedAt) ? 1 : 0;
  return n;
}

/** See `JobStore.nextClaimableAt`: the least instant after `now` from which a live job is claimable. */
export function nextClaimableAt(state: MemoryState, now: Date): Date | null {
  assertDate(now, 'nextClaimableAt now');
  const after = now.getTime();
  let next: number | undefined;
  for (const job of state.active.values()) {
    const at = claimableFrom(job);
    if (at !== undefined && at > after && (next === undefined || at < next)) next = at;
  }
  return next === undefined ? null : new Date(next);
}

export function stats(state: MemoryState): StoreStats {
  return { queues: state.counts.snapshot(), deadLetters: state.dead.size };
}

export function pausedQueues(state: MemoryState): string[] {
  return [...state.paused].sort();
}
