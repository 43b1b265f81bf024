/**
 * Waking waiting jobs in a MemoryStore: `wake` (a child finished, a parent re-checks), signals
 * (stored on the job, waking it when it waits for that signal), and the reads a parent's wait
 * relies on (`isWaitingFor`, `findActiveChild`).
 */
import type { JobRecord, SignalRecord } from '../job-record.js';
import { allows } from '../lifecycle.js';
import { TooManySignalsError } from '../../support/errors.js';
import { MAX_PENDING_SIGNALS } from '../signal-limit.js';
import { assertDate } from './arguments.js';
import { clonePlain } from './clone.js';
import { copyDate } from './record-copy.js';
import { sweep } from './retention.js';
import type { MemoryState } from './state.js';
import { transition } from './transition.js';

export function wake(state: MemoryState, jobId: string, now: Date): boolean {
  assertDate(now, 'wake now');
  const job = state.active.get(jobId);
  // A job waiting for its dependencies wakes only when they are settled (settleDependents).
  if (!job || !allows('wake', job.record.status) || job.record.waitingFor?.dependencies !== undefined) return false;
  sweep(state, now);
  transition(state, job, 'wake', now, awake(now));
  return true;
}

export function isWaitingFor(state: MemoryState, jobId: string, awaitedId: string): boolean {
  const record = state.active.get(jobId)?.record;
  return record?.status === 'waiting' && record.waitingFor?.jobs?.includes(awaitedId) === true;
}

export function findActiveChild(state: MemoryState, parentId: string): string | null {
  for (const job of state.activeByParent.get(parentId)) return job.record.id;
  return null;
}

export function signal(state: MemoryState, jobId: string, req: { name: string; data: unknown; now: Date; id?: string }): boolean {
  assertDate(req.now, 'signal now');
  const job = state.active.get(jobId);
  if (!job) return false;
  const { record } = job;
  const { id } = req;
  if (id !== undefined && (record.signals.some((s) => s.id === id) || record.steps.some((s) => s.signalId === id))) return true;
  if (record.signals.length >= MAX_PENDING_SIGNALS) throw new TooManySignalsError(jobId, req.name, MAX_PENDING_SIGNALS);
  const data = clonePlain(req.data);
  sweep(state, req.now);
  const stored: SignalRecord = { name: req.name, data, at: copyDate(req.now) };
  if (id !== undefined) stored.id = id;
  const store = (r: JobRecord): void => void r.signals.push(stored);
  if (record.status === 'waiting' && record.waitingFor?.signal === req.name) {
    const wake = awake(req.now);
    transition(state, job, 'signalWake', req.now, (r) => {
      store(r);
      wake(r);
    });
  } else {
    transition(state, job, 'signal', req.now, store);
  }
  return true;
}

/** What waking does to a waiting job: it no longer waits, and is due at `now`. */
function awake(now: Date): (record: JobRecord) => void {
  return (record) => {
    record.waitingFor = undefined;
    record.runAt = copyDate(now);
  };
}
