/**
 * What operators do to jobs and queues in a MemoryStore: cancel (at once for a job not running or
 * whose lease ran out; otherwise requested, and ended by the lease holder with `completeCancel`),
 * retry a dead or cancelled job, remove a finished one, pause a queue.
 */
import { LoomError } from '../../support/errors.js';
import type { LeaseRef } from '../job-record.js';
import { toJobSummary, type CancelOutcome, type RemoveOutcome, type RetryOutcome } from '../operations.js';
import { assertDate, assertOptionalString, assertString } from './arguments.js';
import { clonePlain } from './clone.js';
import { replayDeadLetter } from './dead-letters.js';
import { copyDate } from './record-copy.js';
import { sweep } from './retention.js';
import type { MemoryState } from './state.js';
import { cancel, insert, leased, requeue } from './transition.js';

export function cancelJob(state: MemoryState, id: string, req: { reason?: string; now: Date }): CancelOutcome | null {
  assertString(id, 'cancelJob id');
  assertDate(req.now, 'cancelJob now');
  assertOptionalString(req.reason, 'cancelJob reason');
  const job = state.find(id);
  if (!job) return null;
  const { record } = job;
  const expired = record.status === 'running' && record.lease!.until.getTime() < req.now.getTime();
  if (record.status === 'queued' || record.status === 'waiting' || expired) {
    sweep(state, req.now);
    cancel(state, job, req.reason, req.now);
    return { outcome: 'cancelled', job: clonePlain(toJobSummary(record)) };
  }
  if (record.status !== 'running') return { outcome: 'unchanged', job: clonePlain(toJobSummary(record)) };
  if (record.cancelRequestedAt === undefined) {
    record.cancelRequestedAt = copyDate(req.now);
    if (req.reason !== undefined) record.cancelReason = req.reason;
    record.updatedAt = copyDate(req.now);
  }
  return { outcome: 'requested', job: clonePlain(toJobSummary(record)) };
}

export function completeCancel(state: MemoryState, lease: LeaseRef, now: Date): void {
  assertDate(now, 'completeCancel now');
  const job = leased(state, lease, true);
  sweep(state, now);
  cancel(state, job, undefined, now);
}

export function retryJob(state: MemoryState, id: string, now: Date): RetryOutcome | null {
  assertString(id, 'retryJob id');
  assertDate(now, 'retryJob now');
  const job = state.find(id);
  if (!job) return null;
  if (job.record.status === 'dead') {
    replayDeadLetter(state, id, now);
    return { outcome: 'retried', status: 'queued' };
  }
  if (job.record.status !== 'cancelled') return { outcome: 'unchanged', status: job.record.status };
  sweep(state, now);
  const { record } = job;
  state.cancelled.delete(id);
  state.byParent.remove(record.parentId, job);
  state.counts.add(record.queue, 'cancelled', -1);
  requeue(record, now);
  record.cancelRequestedAt = undefined;
  record.cancelReason = undefined;
  insert(state, [record], now);
  return { outcome: 'retried', status: 'queued' };
}

export function removeJob(state: MemoryState, id: string, now: Date): RemoveOutcome | null {
  assertString(id, 'removeJob id');
  assertDate(now, 'removeJob now');
  sweep(state, now);
  const job = state.find(id);
  if (!job) return null;
  const { record } = job;
  switch (record.status) {
    case 'dead':
      state.dead.delete(id);
      break;
    case 'completed':
    case 'cancelled':
      if (record.status === 'cancelled') state.cancelled.delete(id);
      else if (!state.completed.delete(id)) state.held.delete(id);
      state.byParent.remove(record.parentId, job);
      state.freeKey(record);
      state.counts.add(record.queue, record.status, -1);
      break;
    default:
      return { outcome: 'unchanged', status: record.status };
  }
  return { outcome: 'removed', status: record.status };
}

export function setQueuePaused(state: MemoryState, queue: string, paused: boolean, now: Date): void {
  assertString(queue, 'setQueuePaused queue');
  assertDate(now, 'setQueuePaused now');
  if (typeof paused !== 'boolean') throw new LoomError('INVALID_ARGUMENT', `MemoryStore: setQueuePaused paused must be a boolean; nothing changed`);
  if (paused) state.paused.add(queue);
  else state.paused.delete(queue);
}
