import type { ErrorRecord, JobRecord, StepRecord } from '../job-record.js';
import type { ListLinks } from './job-list.js';

/** How many failures a job keeps: the newest {@link MEMORY_STORE_ERROR_HISTORY}, oldest first. */
export const MEMORY_STORE_ERROR_HISTORY = 25;

/**
 * A job as the MemoryStore holds it. `record` is private to the store and never handed out
 * (callers get clones).
 */
export interface StoredJob extends ListLinks<StoredJob> {
  record: JobRecord;
  /** Enqueue order (a replay re-enqueues, so it gets a new one): the FIFO tie-breaker of claims. */
  seq: number;
  /**
   * Bumped on every change of status, lease or `runAt`. Index entries remember the version they
   * were made for, so stale ones are recognised and dropped lazily instead of searched for.
   */
  version: number;
  /** For a `waiting` job: whether it has a timeout (`runAt`); without one it is never claimable. */
  waitHasTimeout: boolean;
  /** Owned by the claim index: whether an entry for the current version is in it. */
  indexed: boolean;
  /** Owned by the claim index: the key of the lane it is indexed in (its group or rate-limit key; '' for none). */
  laneKey: string | undefined;
}

/**
 * A job as it enters the store's state (a new enqueue, or a replay): `seq` its enqueue order,
 * nothing indexed or listed yet. Every field is set from the start, so all stored jobs share one
 * hidden class.
 */
export function newStoredJob(record: JobRecord, seq: number): StoredJob {
  return { record, seq, version: 0, waitHasTimeout: false, indexed: false, laneKey: undefined, list: undefined, prev: undefined, next: undefined };
}

/**
 * The instant (ms) from which a job is claimable, or undefined when it never is in its current
 * state. An expired lease is one with `until < now`, so a running job is claimable from `until + 1`.
 */
export function claimableFrom(job: StoredJob): number | undefined {
  const { record } = job;
  switch (record.status) {
    case 'queued':
      return record.runAt.getTime();
    case 'running':
      return record.lease ? record.lease.until.getTime() + 1 : undefined;
    case 'waiting':
      return job.waitHasTimeout ? record.runAt.getTime() : undefined;
    default:
      return undefined;
  }
}

/** Appends a failure (an owned copy), keeping only the newest {@link MEMORY_STORE_ERROR_HISTORY}. */
export function appendError(record: JobRecord, error: ErrorRecord): void {
  record.errors.push(error);
  if (record.errors.length > MEMORY_STORE_ERROR_HISTORY) {
    record.errors.splice(0, record.errors.length - MEMORY_STORE_ERROR_HISTORY);
  }
}

/**
 * Records a step, first completed write wins: a completed step of that name is never replaced
 * (its result is what later attempts replay); a `pending` one (a sleep or wait in progress) is
 * replaced by the next write of that name. `step` must be an owned copy: it is stored as is.
 * Returns the step now stored (internal, not a clone).
 */
export function putStep(record: JobRecord, step: StepRecord): StepRecord {
  const index = record.steps.findIndex((s) => s.name === step.name);
  const existing = index >= 0 ? record.steps[index] : undefined;
  if (existing?.status === 'completed') return existing;
  if (existing) record.steps[index] = step;
  else record.steps.push(step);
  return step;
}
