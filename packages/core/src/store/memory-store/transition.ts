/**
 * The one place a MemoryStore job changes state. Every write names its row of the lifecycle table
 * (`LIFECYCLE` in `../lifecycle.ts`) and {@link transition} applies what the row says: it refuses
 * a job whose status is not in the row's `from` (`InvalidTransitionError`, a bug in the store;
 * nothing changed), then sets the status, the attempt, clears the lease, takes or frees the flow
 * slots, keeps the status counts, and moves the job between the maps that keep it (active,
 * completed, cancelled, dead) and in the claim index. {@link leased} is the fence of every fenced
 * write, deciding with `holdsLease`, the one lease rule. {@link insert} stores new jobs.
 */
import { CancelledError, InvalidTransitionError, LeaseLostError } from '../../support/errors.js';
import type { JobRecord, JobStatus, LeaseRef } from '../job-record.js';
import { LIFECYCLE, attemptAfter, holdsLease, refusedAfterCancelRequest, statusAfter, type TransitionName } from '../lifecycle.js';
import { copyDate } from './record-copy.js';
import { releaseChildren } from './retention.js';
import type { MemoryState } from './state.js';
import { newStoredJob, type StoredJob } from './stored-job.js';

const isActive = (status: JobStatus): boolean => status === 'queued' || status === 'running' || status === 'waiting';

/**
 * The job whose lease `lease` holds, for the fenced transition `name`; otherwise a
 * `LeaseLostError` (nothing changed). Once its cancel was requested, a transition the table says a
 * cancel request stops (every fenced one but a lease extension and the cancel's own end) is
 * refused with a `CancelledError`, so no outcome of the run is accepted after the cancel.
 */
export function leased(state: MemoryState, lease: LeaseRef, name: TransitionName): StoredJob {
  const job = state.active.get(lease.jobId);
  if (!job) {
    throw new LeaseLostError(lease.jobId, 'the job is no longer active: it finished, died or does not exist');
  }
  const { record } = job;
  if (!holdsLease(record, lease)) throw new LeaseLostError(lease.jobId);
  if (record.cancelRequestedAt !== undefined && refusedAfterCancelRequest(name)) {
    throw new CancelledError(
      lease.jobId,
      record.cancelReason,
      'its cancel was requested, so this write was refused and nothing changed; the run ends cancelled',
    );
  }
  return job;
}

/**
 * Makes transition `name` on `job`: `change` (the write's own fields) first, then what the row
 * says. `at`: a copy of `now` the store owns (a batch shares one). A dead letter's reason is
 * `record.deadReason`, set by `change`.
 */
export function transition(
  state: MemoryState,
  job: StoredJob,
  name: TransitionName,
  now: Date,
  change?: (record: JobRecord) => void,
  at = copyDate(now),
): void {
  const row = LIFECYCLE[name];
  const { record } = job;
  const from = record.status;
  if (!row.from.includes(from)) throw new InvalidTransitionError(record.id, name, from, row.from);
  const to = statusAfter(name, from);
  change?.(record);
  // Attempts that start again from zero are remembered (a replayed job's history stays readable).
  if (row.attempt === 'reset') record.priorAttempts = (record.priorAttempts ?? 0) + record.attempt;
  record.attempt = attemptAfter(name, record.attempt);
  if (row.lease === 'clear') record.lease = undefined;
  if (row.slots === 'take') state.flow.started(job);
  else if (row.slots === 'free') state.flow.stopped(job);
  if (from === 'queued' && to !== 'queued') state.debounce.left(record);
  record.updatedAt = at;
  if (from !== to) {
    // Dead jobs are counted by the dead-letter map, not by status.
    if (from !== 'dead') state.counts.add(record.queue, from, -1);
    if (to !== 'dead' && to !== 'removed') state.counts.add(record.queue, to, 1);
  }
  if (to === 'removed') return forget(state, job);
  record.status = to;
  // A batch member's end moves its batch's counts in this same step (the last one enqueues the callbacks).
  if (record.batchId !== undefined && from !== to) insert(state, state.batches.memberMoved(record, from, to, now, state.keys), now);
  if (!isActive(from)) return reenter(state, job, from, now);
  if (!isActive(to)) return finish(state, job, now, at);
  // A row that keeps the lease also keeps the status (a step, progress, a signal stored, a cancel
  // requested): nothing the claim index orders by changed, so no new version and no new entry.
  if (row.lease === 'keep') return;
  job.version += 1;
  state.index.update(job, now.getTime());
  if (to === 'queued') state.notify(record);
}

/**
 * Stores new records (the `enqueue` row: a job that did not exist, `queued`; or `enqueueWaiting`:
 * `waiting` for its dependencies, never claimable until they are settled).
 */
export function insert(state: MemoryState, records: JobRecord[], now: Date): void {
  for (const record of records) {
    const row = LIFECYCLE[record.status === 'waiting' ? 'enqueueWaiting' : 'enqueue'];
    if (row.to !== record.status) throw new InvalidTransitionError(record.id, 'enqueue', record.status, []);
    state.counts.add(record.queue, record.status, 1);
    enter(state, record, now);
  }
}

/** A record enters the active maps, `queued` (or `waiting` for dependencies), as a new enqueue (a new `seq`, so it claims last among equals). */
function enter(state: MemoryState, record: JobRecord, now: Date): void {
  const job = newStoredJob(record, ++state.seq);
  state.jobs.set(record.id, job);
  state.active.add(job);
  state.byParent.add(record.parentId, job);
  state.activeByParent.add(record.parentId, job);
  if (record.idempotencyKey !== undefined) state.keys.set(record.idempotencyKey, record.id);
  state.debounce.entered(job);
  state.index.update(job, now.getTime());
  if (record.status === 'queued') state.notify(record);
}

/** An active job that finished (`completed`, `cancelled`, `dead`): out of the active maps and the claim index. */
function finish(state: MemoryState, job: StoredJob, now: Date, at: Date): void {
  const { record } = job;
  state.active.remove(job);
  state.activeByParent.remove(record.parentId, job);
  record.finishedAt = at;
  job.version += 1;
  state.index.update(job, now.getTime());
  if (record.status === 'dead') {
    // A dead job frees its idempotency key and is no longer one of its parent's children; a replay brings both back.
    state.byParent.remove(record.parentId, job);
    state.freeKey(record);
    state.dead.set(record.id, { job, reason: record.deadReason!, diedAt: at });
  } else if (record.status === 'completed') {
    state.completed.add(job);
  } else {
    state.cancelled.set(record.id, job);
  }
  releaseChildren(state, record.id);
  if (record.dependents !== undefined && record.dependents.length > 0) state.unsettled.add(record.id);
}

/** A dead or cancelled job made `queued` again (replay, retryJob): it leaves its finished map and enters as new, due now. */
function reenter(state: MemoryState, job: StoredJob, from: JobStatus, now: Date): void {
  const { record } = job;
  record.runAt = copyDate(now);
  record.waitingFor = undefined;
  record.finishedAt = undefined;
  if (from === 'dead') state.dead.delete(record.id);
  else {
    state.cancelled.delete(record.id);
    state.byParent.remove(record.parentId, job);
  }
  enter(state, record, now);
}

/** A finished job removed (`removeJob`): out of the store, its idempotency key freed. */
function forget(state: MemoryState, job: StoredJob): void {
  const { record } = job;
  state.forget(record.id);
  if (record.status === 'dead') {
    state.dead.delete(record.id);
    return;
  }
  if (record.status === 'cancelled') state.cancelled.delete(record.id);
  else if (!state.completed.remove(job)) state.held.delete(record.id);
  state.byParent.remove(record.parentId, job);
  state.freeKey(record);
}
