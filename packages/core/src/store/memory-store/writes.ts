/**
 * The outcomes of runs in a MemoryStore: the fenced writes of the worker holding a job's lease
 * (complete, retry, dead-letter, release, sleep, wait) and what a running job records as it goes
 * (steps, consumed signals, progress). Each goes through `leased`, so a worker whose lease was
 * taken over changes nothing.
 */
import { LoomError } from '../../support/errors.js';
import type { ErrorRecord, LeaseRef, StepRecord, WaitCondition } from '../job-record.js';
import type { CompletionItem, CompletionOutcome } from '../store.js';
import { assertDate } from './arguments.js';
import { clonePlain } from './clone.js';
import { MemoryTransaction } from './memory-transaction.js';
import { copyDate } from './record-copy.js';
import { releaseChildren, sweep } from './retention.js';
import type { MemoryState } from './state.js';
import { appendError, putStep, type StoredJob } from './stored-job.js';
import { finish, leased, transition } from './transition.js';

export function complete(state: MemoryState, lease: LeaseRef, outcome: { result?: unknown; now: Date; session?: unknown }): void {
  assertDate(outcome.now, 'complete now');
  leased(state, lease);
  const result = clonePlain(outcome.result);
  if (outcome.session !== undefined) {
    MemoryTransaction.of(outcome.session, state).buffer({
      check: () => void leased(state, lease),
      // Checked just before; only a second complete of the same lease in one transaction can miss.
      apply: () => {
        const job = state.active.get(lease.jobId);
        if (job?.record.lease?.token === lease.token) completeJob(state, job, result, outcome.now);
      },
    });
    return;
  }
  sweep(state, outcome.now);
  completeJob(state, leased(state, lease), result, outcome.now);
}

export function completeMany(state: MemoryState, items: CompletionItem[], now: Date): CompletionOutcome[] {
  const leases = Array.isArray(items) && items.every((item) => typeof item?.lease === 'object' && item.lease !== null);
  if (!leases) throw new LoomError('INVALID_ARGUMENT', 'completeMany items must be an array of { lease, result? }');
  assertDate(now, 'completeMany now');
  sweep(state, now);
  const finishedAt = copyDate(now); // one for the batch, as in claim
  return items.map(({ lease, result }) => {
    try {
      const job = leased(state, lease);
      completeJob(state, job, clonePlain(result), now, finishedAt);
      return 'completed';
    } catch (error) {
      if (LoomError.is(error, 'LEASE_LOST')) return 'lost';
      if (LoomError.is(error, 'CANCELLED')) return 'cancelled';
      return { error: error as Error };
    }
  });
}

function completeJob(state: MemoryState, job: StoredJob, result: unknown, now: Date, at?: Date): void {
  finish(state, job, 'completed', now, undefined, at);
  if (result !== undefined) job.record.result = result;
}

export function retry(state: MemoryState, lease: LeaseRef, outcome: { runAt: Date; error: ErrorRecord; now: Date }): void {
  assertDate(outcome.runAt, 'retry runAt');
  assertDate(outcome.now, 'retry now');
  const job = leased(state, lease);
  const error = clonePlain(outcome.error);
  transition(state, job, 'queued', outcome.now, (record) => {
    record.lease = undefined;
    record.runAt = copyDate(outcome.runAt);
    appendError(record, error);
  });
}

export function deadLetter(state: MemoryState, lease: LeaseRef, outcome: { reason: string; error?: ErrorRecord; now: Date }): void {
  assertDate(outcome.now, 'deadLetter now');
  const job = leased(state, lease);
  const error = outcome.error && clonePlain(outcome.error);
  sweep(state, outcome.now);
  const { record } = job;
  if (error) appendError(record, error);
  state.active.delete(record.id);
  state.activeByName.remove(record.name, job);
  state.byParent.remove(record.parentId, job);
  state.activeByParent.remove(record.parentId, job);
  state.freeKey(record);
  state.counts.add(record.queue, record.status, -1);
  state.flow.stopped(job);
  record.lease = undefined;
  record.status = 'dead';
  record.deadReason = outcome.reason;
  record.finishedAt = copyDate(outcome.now);
  record.updatedAt = copyDate(outcome.now);
  job.version += 1;
  state.index.update(job, outcome.now.getTime());
  state.dead.set(record.id, { job, reason: outcome.reason, diedAt: copyDate(outcome.now) });
  releaseChildren(state, record.id);
}

export function release(state: MemoryState, lease: LeaseRef, now: Date): void {
  assertDate(now, 'release now');
  const job = leased(state, lease);
  transition(state, job, 'queued', now, (record) => {
    record.lease = undefined;
    record.attempt -= 1;
    record.runAt = copyDate(now);
  });
}

export function sleep(state: MemoryState, lease: LeaseRef, req: { runAt: Date; step?: StepRecord; now: Date }): void {
  assertDate(req.runAt, 'sleep runAt');
  assertDate(req.now, 'sleep now');
  const job = leased(state, lease);
  const step = req.step && clonePlain(req.step);
  transition(state, job, 'queued', req.now, (record) => {
    record.lease = undefined;
    record.attempt -= 1;
    record.runAt = copyDate(req.runAt);
    if (step) putStep(record, step);
  });
}

export function wait(
  state: MemoryState,
  lease: LeaseRef,
  req: { for: WaitCondition; timeoutAt?: Date; step?: StepRecord; now: Date },
): 'waiting' | 'signal-pending' {
  if (req.timeoutAt !== undefined) assertDate(req.timeoutAt, 'wait timeoutAt');
  assertDate(req.now, 'wait now');
  const job = leased(state, lease);
  const awaited = req.for.signal;
  if (awaited !== undefined && job.record.signals.some((s) => s.name === awaited)) return 'signal-pending';
  const waitingFor = clonePlain(req.for);
  const step = req.step && clonePlain(req.step);
  job.waitHasTimeout = req.timeoutAt !== undefined;
  transition(state, job, 'waiting', req.now, (record) => {
    record.lease = undefined;
    record.attempt -= 1;
    record.waitingFor = waitingFor;
    if (req.timeoutAt) record.runAt = copyDate(req.timeoutAt);
    if (step) putStep(record, step);
  });
  return 'waiting';
}

export function recordStep(state: MemoryState, lease: LeaseRef, step: StepRecord, now: Date): StepRecord {
  const { record } = leased(state, lease);
  const stored = putStep(record, clonePlain(step));
  record.updatedAt = copyDate(now);
  return clonePlain(stored);
}

export function consumeSignal(state: MemoryState, lease: LeaseRef, req: { signal: string; stepName: string; now: Date }): StepRecord | null {
  const { record } = leased(state, lease);
  const done = record.steps.find((s) => s.name === req.stepName && s.status === 'completed');
  if (done) return clonePlain(done);
  const index = record.signals.findIndex((s) => s.name === req.signal);
  if (index < 0) return null;
  const [signal] = record.signals.splice(index, 1);
  const step: StepRecord = { name: req.stepName, kind: 'signal', status: 'completed', result: signal.data, at: copyDate(req.now) };
  if (signal.id !== undefined) step.signalId = signal.id;
  const stored = putStep(record, step);
  record.updatedAt = copyDate(req.now);
  return clonePlain(stored);
}

export function progress(state: MemoryState, lease: LeaseRef, value: unknown, now: Date): void {
  const { record } = leased(state, lease);
  record.progress = clonePlain(value);
  record.updatedAt = copyDate(now);
}
