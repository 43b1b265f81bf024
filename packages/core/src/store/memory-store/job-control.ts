/**
 * What operators do to jobs and queues in a MemoryStore: cancel (at once for a job not running or
 * whose lease ran out; otherwise requested, and ended by the lease holder with `completeCancel`),
 * retry a dead or cancelled job, remove a finished one, pause a queue.
 */
import { LoomError } from '../../support/errors.js';
import type { LeaseRef } from '../job-record.js';
import { allows } from '../lifecycle.js';
import { toJobSummary, type CancelOutcome, type RemoveOutcome, type RetryOutcome, type RunNowOutcome } from '../operations.js';
import { assertDate, assertOptionalString, assertString } from './arguments.js';
import { clonePlain } from './clone.js';
import { replayDeadLetter } from './dead-letters.js';
import { copyDate } from './record-copy.js';
import { sweep } from './retention.js';
import type { MemoryState } from './state.js';
import type { StoredJob } from './stored-job.js';
import { leased, transition } from './transition.js';

export function cancelJob(state: MemoryState, id: string, req: { reason?: string; now: Date }): CancelOutcome | null {
  assertString(id, 'cancelJob id');
  assertDate(req.now, 'cancelJob now');
  assertOptionalString(req.reason, 'cancelJob reason');
  const job = state.find(id);
  if (!job) return null;
  const { record } = job;
  // A running job whose lease ran out has no holder to end it: it is cancelled at once.
  const expired = record.status === 'running' && record.lease!.until.getTime() < req.now.getTime();
  const byCancel = allows('cancel', record.status) ? 'cancel' : expired ? 'cancelExpired' : undefined;
  if (byCancel !== undefined) {
    sweep(state, req.now);
    cancel(state, job, byCancel, req.reason, req.now);
    return { outcome: 'cancelled', job: clonePlain(toJobSummary(record)) };
  }
  if (!allows('requestCancel', record.status)) return { outcome: 'unchanged', job: clonePlain(toJobSummary(record)) };
  if (record.cancelRequestedAt === undefined) {
    transition(state, job, 'requestCancel', req.now, (r) => {
      r.cancelRequestedAt = copyDate(req.now);
      if (req.reason !== undefined) r.cancelReason = req.reason;
    });
  }
  return { outcome: 'requested', job: clonePlain(toJobSummary(record)) };
}

export function completeCancel(state: MemoryState, lease: LeaseRef, now: Date): void {
  assertDate(now, 'completeCancel now');
  const job = leased(state, lease, 'completeCancel');
  sweep(state, now);
  cancel(state, job, 'completeCancel', undefined, now);
}

/** A job → `cancelled`, by one of the three cancel transitions. */
function cancel(state: MemoryState, job: StoredJob, name: 'cancel' | 'cancelExpired' | 'completeCancel', reason: string | undefined, now: Date): void {
  transition(state, job, name, now, (record) => {
    record.waitingFor = undefined;
    if (reason !== undefined) record.cancelReason = reason;
  });
}

export function retryJob(state: MemoryState, id: string, now: Date): RetryOutcome | null {
  assertString(id, 'retryJob id');
  assertDate(now, 'retryJob now');
  const job = state.find(id);
  if (!job) return null;
  if (job.record.status === 'dead') {
    // A dead job's retry is a replay: refused while another job holds its idempotency key.
    replayDeadLetter(state, id, now, 'retryJob');
    return { outcome: 'retried', status: 'queued' };
  }
  if (!allows('retryJob', job.record.status)) return { outcome: 'unchanged', status: job.record.status };
  sweep(state, now);
  transition(state, job, 'retryJob', now, (record) => {
    record.cancelRequestedAt = undefined;
    record.cancelReason = undefined;
  });
  return { outcome: 'retried', status: 'queued' };
}

/** A delayed `queued` job due at `now` (not one asleep in a workflow: it would only sleep again). */
export function runJobNow(state: MemoryState, id: string, now: Date): RunNowOutcome | null {
  assertString(id, 'runJobNow id');
  assertDate(now, 'runJobNow now');
  const job = state.find(id);
  if (!job) return null;
  const { record } = job;
  const later = record.runAt.getTime() > now.getTime();
  const asleep = record.sleepUntil !== undefined && record.sleepUntil.getTime() > now.getTime();
  if (!allows('runJobNow', record.status) || !later || asleep) return { outcome: 'unchanged', status: record.status };
  transition(state, job, 'runJobNow', now, (r) => {
    r.runAt = copyDate(now);
  });
  return { outcome: 'due', status: record.status };
}

export function removeJob(state: MemoryState, id: string, now: Date): RemoveOutcome | null {
  assertString(id, 'removeJob id');
  assertDate(now, 'removeJob now');
  sweep(state, now);
  const job = state.find(id);
  if (!job) return null;
  const { status } = job.record;
  if (!allows('removeJob', status)) return { outcome: 'unchanged', status };
  transition(state, job, 'removeJob', now);
  return { outcome: 'removed', status };
}

export function setQueuePaused(state: MemoryState, queue: string, paused: boolean, now: Date): void {
  assertString(queue, 'setQueuePaused queue');
  assertDate(now, 'setQueuePaused now');
  if (typeof paused !== 'boolean') throw new LoomError('INVALID_ARGUMENT', `MemoryStore: setQueuePaused paused must be a boolean; nothing changed`);
  if (paused) state.paused.add(queue);
  else state.paused.delete(queue);
}
