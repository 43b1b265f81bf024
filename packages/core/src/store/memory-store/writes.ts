/**
 * The outcomes of runs in a MemoryStore: the fenced writes of the worker holding a job's lease
 * (complete, retry, dead-letter, release, sleep, wait) and what a running job records as it goes
 * (steps, consumed signals, progress). Each goes through `leased`, so a worker whose lease was
 * taken over changes nothing.
 */
import { LoomError } from '../../support/errors.js';
import {
  DEFAULT_JOB_LOG_LINES,
  jobLogKeepProblem,
  jobLogProblem,
  type ErrorRecord,
  type JobLogLine,
  type LeaseRef,
  type StepRecord,
  type WaitCondition,
} from '../job-record.js';
import { holdsLease } from '../lifecycle.js';
import type { CompletionItem, CompletionOutcome } from '../store.js';
import { assertDate } from './arguments.js';
import { clonePlain } from './clone.js';
import { MemoryTransaction } from './memory-transaction.js';
import { copyDate } from './record-copy.js';
import { sweep } from './retention.js';
import type { MemoryState } from './state.js';
import { appendError, putStep, type StoredJob } from './stored-job.js';
import { leased, transition } from './transition.js';
import { mapPacked } from '../../support/packed-map.js';

export function complete(state: MemoryState, lease: LeaseRef, outcome: { result?: unknown; now: Date; session?: unknown }): void {
  assertDate(outcome.now, 'complete now');
  leased(state, lease, 'complete');
  const result = clonePlain(outcome.result);
  if (outcome.session !== undefined) {
    MemoryTransaction.of(outcome.session, state).buffer({
      check: () => void leased(state, lease, 'complete'),
      // Checked just before; only a second complete of the same lease in one transaction can miss.
      apply: () => {
        const job = state.active.get(lease.jobId);
        if (job && holdsLease(job.record, lease)) completeJob(state, job, result, outcome.now);
      },
    });
    return;
  }
  sweep(state, outcome.now);
  completeJob(state, leased(state, lease, 'complete'), result, outcome.now);
}

/**
 * Completes each item whose lease holds its job. Items are applied in order, so of two items for
 * one job only the one holding the lease completes it; any other reports `lost` (its token never
 * held the lease, or the job finished by the earlier item).
 */
export function completeMany(state: MemoryState, items: CompletionItem[], now: Date): CompletionOutcome[] {
  const leases = Array.isArray(items) && items.every((item) => typeof item?.lease === 'object' && item.lease !== null);
  if (!leases) throw new LoomError('INVALID_ARGUMENT', 'completeMany items must be an array of { lease, result? }');
  assertDate(now, 'completeMany now');
  sweep(state, now);
  const finishedAt = copyDate(now); // one for the batch, as in claim
  return mapPacked(items, ({ lease, result, logs }) => {
    try {
      const lines = logs === undefined ? undefined : checkedLogs(logs.lines, logs.keep, 'completeMany logs');
      const job = leased(state, lease, 'complete');
      completeJob(state, job, clonePlain(result), now, finishedAt, lines && logs ? { lines, keep: logs.keep } : undefined);
      return 'completed';
    } catch (error) {
      if (LoomError.is(error, 'LEASE_LOST')) return 'lost';
      if (LoomError.is(error, 'CANCELLED')) return 'cancelled';
      return { error: error as Error };
    }
  });
}

function completeJob(state: MemoryState, job: StoredJob, result: unknown, now: Date, at?: Date, logs?: { lines: JobLogLine[]; keep: number }): void {
  transition(
    state,
    job,
    'complete',
    now,
    result === undefined && logs === undefined
      ? undefined
      : (record) => {
          if (result !== undefined) record.result = result;
          if (logs !== undefined) record.logs = [...(record.logs ?? []), ...logs.lines].slice(-logs.keep);
        },
    at,
  );
  state.series.add(job.record.queue, now, { completed: 1 });
}

export function retry(state: MemoryState, lease: LeaseRef, outcome: { runAt: Date; error: ErrorRecord; now: Date }): void {
  assertDate(outcome.runAt, 'retry runAt');
  assertDate(outcome.now, 'retry now');
  const job = leased(state, lease, 'retry');
  const error = clonePlain(outcome.error);
  transition(state, job, 'retry', outcome.now, (record) => {
    record.runAt = copyDate(outcome.runAt);
    appendError(record, error);
  });
  state.series.add(job.record.queue, outcome.now, { failed: 1 });
}

export function deadLetter(state: MemoryState, lease: LeaseRef, outcome: { reason: string; error?: ErrorRecord; now: Date }): void {
  assertDate(outcome.now, 'deadLetter now');
  const job = leased(state, lease, 'deadLetter');
  const error = outcome.error && clonePlain(outcome.error);
  sweep(state, outcome.now);
  transition(state, job, 'deadLetter', outcome.now, (record) => {
    if (error) appendError(record, error);
    record.deadReason = outcome.reason;
  });
  state.series.add(job.record.queue, outcome.now, { failed: 1, dead: 1 });
}

export function release(state: MemoryState, lease: LeaseRef, now: Date): void {
  assertDate(now, 'release now');
  const job = leased(state, lease, 'release');
  transition(state, job, 'release', now, (record) => {
    record.runAt = copyDate(now);
  });
}

export function sleep(state: MemoryState, lease: LeaseRef, req: { runAt: Date; step?: StepRecord; now: Date }): void {
  assertDate(req.runAt, 'sleep runAt');
  assertDate(req.now, 'sleep now');
  const job = leased(state, lease, 'sleep');
  const step = req.step && clonePlain(req.step);
  transition(state, job, 'sleep', req.now, (record) => {
    record.runAt = copyDate(req.runAt);
    record.sleepUntil = copyDate(req.runAt);
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
  const job = leased(state, lease, 'wait');
  const awaited = req.for.signal;
  if (awaited !== undefined && job.record.signals.some((s) => s.name === awaited)) return 'signal-pending';
  const waitingFor = clonePlain(req.for);
  const step = req.step && clonePlain(req.step);
  job.waitHasTimeout = req.timeoutAt !== undefined;
  transition(state, job, 'wait', req.now, (record) => {
    record.waitingFor = waitingFor;
    if (req.timeoutAt) record.runAt = copyDate(req.timeoutAt);
    if (step) putStep(record, step);
  });
  return 'waiting';
}

export function recordStep(state: MemoryState, lease: LeaseRef, step: StepRecord, now: Date): StepRecord {
  const job = leased(state, lease, 'recordStep');
  const copy = clonePlain(step);
  let stored = copy;
  transition(state, job, 'recordStep', now, (record) => {
    stored = putStep(record, copy);
  });
  return clonePlain(stored);
}

export function consumeSignal(state: MemoryState, lease: LeaseRef, req: { signal: string; stepName: string; now: Date }): StepRecord | null {
  const job = leased(state, lease, 'consumeSignal');
  const { record } = job;
  const done = record.steps.find((s) => s.name === req.stepName && s.status === 'completed');
  if (done) return clonePlain(done);
  const index = record.signals.findIndex((s) => s.name === req.signal);
  if (index < 0) return null;
  let stored: StepRecord | undefined;
  transition(state, job, 'consumeSignal', req.now, (r) => {
    const [signal] = r.signals.splice(index, 1);
    const step: StepRecord = { name: req.stepName, kind: 'signal', status: 'completed', result: signal.data, at: copyDate(req.now) };
    if (signal.id !== undefined) step.signalId = signal.id;
    stored = putStep(r, step);
  });
  return clonePlain(stored!);
}

/** Copies of `lines` once they and `keep` are checked (`INVALID_ARGUMENT` naming `what` otherwise). */
function checkedLogs(lines: JobLogLine[], keep: number, what: string): JobLogLine[] {
  const problem = jobLogProblem(lines);
  if (problem !== undefined)
    throw new LoomError('INVALID_ARGUMENT', `MemoryStore: ${what} lines${problem.startsWith('[') ? '' : ' '}${problem}; nothing changed`);
  const keepProblem = jobLogKeepProblem(keep);
  if (keepProblem !== undefined) throw new LoomError('INVALID_ARGUMENT', `MemoryStore: ${what} keep ${keepProblem}; nothing changed`);
  return lines.map(copyLogLine);
}

export function appendLogs(state: MemoryState, lease: LeaseRef, lines: JobLogLine[], now: Date, keep = DEFAULT_JOB_LOG_LINES): void {
  const copies = checkedLogs(lines, keep, 'appendLogs');
  const job = leased(state, lease, 'appendLogs');
  transition(state, job, 'appendLogs', now, (record) => {
    record.logs = [...(record.logs ?? []), ...copies].slice(-keep);
  });
}

function copyLogLine(l: JobLogLine): JobLogLine {
  const copy: JobLogLine = { at: copyDate(l.at), level: l.level, msg: l.msg, attempt: l.attempt };
  if (l.fields !== undefined) copy.fields = clonePlain(l.fields);
  return copy;
}

export function progress(state: MemoryState, lease: LeaseRef, value: unknown, now: Date): void {
  const job = leased(state, lease, 'progress');
  const copy = clonePlain(value);
  transition(state, job, 'progress', now, (record) => {
    record.progress = copy;
  });
}
