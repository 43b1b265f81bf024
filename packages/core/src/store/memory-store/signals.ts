/**
 * Waking waiting jobs in a MemoryStore: `wake` (a child finished, a parent re-checks), signals
 * (stored on the job, waking it when it waits for that signal), and the reads a parent's wait
 * relies on (`isWaitingFor`, `findActiveChild`).
 */
import type { SignalRecord } from '../job-record.js';
import { MAX_PENDING_SIGNALS, TooManySignalsError } from '../signal-limit.js';
import { assertDate } from './arguments.js';
import { clonePlain } from './clone.js';
import { copyDate } from './record-copy.js';
import { sweep } from './retention.js';
import type { MemoryState } from './state.js';
import { wake as wakeJob } from './transition.js';

export function wake(state: MemoryState, jobId: string, now: Date): boolean {
  assertDate(now, 'wake now');
  const job = state.active.get(jobId);
  if (job?.record.status !== 'waiting') return false;
  sweep(state, now);
  wakeJob(state, job, now);
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
  if (record.signals.length >= MAX_PENDING_SIGNALS) throw new TooManySignalsError(jobId, req.name);
  const data = clonePlain(req.data);
  sweep(state, req.now);
  const stored: SignalRecord = { name: req.name, data, at: copyDate(req.now) };
  if (id !== undefined) stored.id = id;
  record.signals.push(stored);
  record.updatedAt = copyDate(req.now);
  if (record.status === 'waiting' && record.waitingFor?.signal === req.name) wakeJob(state, job, req.now);
  return true;
}
