/**
 * Where a MemoryStore job changes state: `transition` for a job that stays active, `finish` for one
 * that completes or is cancelled, `insert` for a job that enters the store (enqueued, replayed,
 * retried), and `leased`, the fence every fenced write goes through.
 */
import { CancelledError, LeaseLostError } from '../../support/errors.js';
import type { JobRecord, JobStatus, LeaseRef } from '../job-record.js';
import { copyDate } from './record-copy.js';
import { releaseChildren } from './retention.js';
import type { MemoryState } from './state.js';
import type { StoredJob } from './stored-job.js';

/**
 * The job leased with `lease.token`, or a `LeaseLostError` (nothing changed). Once its cancel was
 * requested only a lease extension and the cancel itself (`cancelRequested`) may write: anything
 * else is refused with a `CancelledError`, so no outcome of the run is accepted after the cancel.
 */
export function leased(state: MemoryState, lease: LeaseRef, cancelRequested = false): StoredJob {
  const job = state.active.get(lease.jobId);
  if (!job) {
    throw new LeaseLostError(lease.jobId, 'the job is no longer active: it finished, died or does not exist');
  }
  const { record } = job;
  if (record.status !== 'running' || record.lease?.token !== lease.token) {
    throw new LeaseLostError(lease.jobId);
  }
  if (!cancelRequested && record.cancelRequestedAt !== undefined) {
    throw new CancelledError(lease.jobId, record.cancelReason, 'its cancel was requested, so this write was refused and nothing changed; the run ends cancelled');
  }
  return job;
}

/** Applies `change` and the new status, then re-indexes the job. `at`: a copy of `now` the store owns (one per batch). */
export function transition(state: MemoryState, job: StoredJob, to: JobStatus, now: Date, change: (record: JobRecord) => void, at = copyDate(now)): void {
  const { record } = job;
  const from = record.status;
  change(record);
  record.status = to;
  record.updatedAt = at;
  job.version += 1;
  if (from !== to) state.counts.move(record.queue, from, to);
  if (from === 'running' && to !== 'running') state.flow.stopped(job);
  else if (to === 'running' && from !== 'running') {
    state.flow.started(job);
    state.debounce.left(record);
  }
  state.index.update(job, now.getTime());
  if (to === 'queued') state.notify(record);
}

/** An active job → `completed` or `cancelled`: out of the active maps and the claim index, kept finished. */
export function finish(state: MemoryState, job: StoredJob, to: 'completed' | 'cancelled', now: Date, change: ((record: JobRecord) => void) | undefined, at = copyDate(now)): void {
  const { record } = job;
  state.active.delete(record.id);
  state.activeByName.remove(record.name, job);
  state.activeByParent.remove(record.parentId, job);
  state.counts.move(record.queue, record.status, to);
  if (record.status === 'running') state.flow.stopped(job);
  record.lease = undefined;
  record.status = to;
  change?.(record);
  record.finishedAt = at;
  record.updatedAt = at;
  job.version += 1;
  state.index.update(job, now.getTime());
  (to === 'completed' ? state.completed : state.cancelled).set(record.id, job);
  releaseChildren(state, record.id);
}

/** An active job → `cancelled`. */
export function cancel(state: MemoryState, job: StoredJob, reason: string | undefined, now: Date): void {
  state.debounce.left(job.record);
  finish(state, job, 'cancelled', now, (record) => {
    record.waitingFor = undefined;
    if (reason !== undefined) record.cancelReason = reason;
  });
}

/** A waiting job → `queued`, claimable at `now`. */
export function wake(state: MemoryState, job: StoredJob, now: Date): void {
  transition(state, job, 'queued', now, (record) => {
    delete record.waitingFor;
    record.runAt = copyDate(now);
  });
}

/** A finished record made `queued` again at `now` with its attempts reset (replay, retry). */
export function requeue(record: JobRecord, now: Date): void {
  record.status = 'queued';
  record.priorAttempts = (record.priorAttempts ?? 0) + record.attempt;
  record.attempt = 0;
  record.runAt = copyDate(now);
  record.updatedAt = copyDate(now);
  record.lease = undefined;
  record.waitingFor = undefined;
  record.finishedAt = undefined;
}

/** Stores new (or replayed) `queued` records. */
export function insert(state: MemoryState, records: JobRecord[], now: Date): void {
  for (const record of records) {
    const job: StoredJob = { record, seq: ++state.seq, version: 0, waitHasTimeout: false, indexed: false };
    state.active.set(record.id, job);
    state.activeByName.add(record.name, job);
    state.byParent.add(record.parentId, job);
    state.activeByParent.add(record.parentId, job);
    if (record.idempotencyKey !== undefined) state.keys.set(record.idempotencyKey, record.id);
    state.debounce.entered(job);
    state.counts.add(record.queue, 'queued', 1);
    state.index.update(job, now.getTime());
    state.notify(record);
  }
}
