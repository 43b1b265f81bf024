import type { ErrorRecord, JobRecord, SignalRecord, StepRecord } from '../store/job-record.js';

/** The format name of a run record (`loom jobs export`). */
export const RUN_RECORD_FORMAT = 'loom-run';
/** The version of the run record format this library writes and reads. */
export const RUN_RECORD_VERSION = 1;

/**
 * A run as `loom jobs export ID` writes it (JSON; dates as ISO 8601 strings), for `replayRun` of
 * `@loom/testing`. Version 1:
 * - `format: 'loom-run'`, `version: 1`, `exportedAt`;
 * - `job`: id, name, queue, status, attempt, maxAttempts, createdAt, finishedAt?, result?, deadReason?;
 * - `payload`: the job's payload;
 * - `steps`: every recorded step, in the order stored (steps, sleeps with `wakeAt`, signal and
 *   child-job waits, `patched:` markers), each with its result or error;
 * - `signals`: signals stored on the job and not taken yet;
 * - `errors`: the job's error history, oldest first.
 * A reader refuses another `format` and a `version` newer than it knows.
 */
export interface RunRecord {
  format: typeof RUN_RECORD_FORMAT;
  version: number;
  exportedAt: string;
  job: {
    id: string;
    name: string;
    queue: string;
    status: string;
    attempt: number;
    maxAttempts: number;
    createdAt: string;
    finishedAt?: string;
    result?: unknown;
    deadReason?: string;
  };
  payload: unknown;
  steps: Array<Omit<StepRecord, 'at' | 'wakeAt' | 'error'> & { at: string; wakeAt?: string; error?: ExportedError }>;
  signals: Array<Omit<SignalRecord, 'at'> & { at: string }>;
  errors: ExportedError[];
}

/** An {@link ErrorRecord} with its date as a string. */
export type ExportedError = Omit<ErrorRecord, 'at'> & { at: string };

const iso = (d: Date): string => d.toISOString();
const exportError = (e: ErrorRecord): ExportedError => ({ ...e, at: iso(e.at) });

/** The run record of `job` (see {@link RunRecord}). */
export function exportRun(job: JobRecord, now: Date): RunRecord {
  const summary: RunRecord['job'] = {
    id: job.id,
    name: job.name,
    queue: job.queue,
    status: job.status,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    createdAt: iso(job.createdAt),
  };
  if (job.finishedAt) summary.finishedAt = iso(job.finishedAt);
  if (job.result !== undefined) summary.result = job.result;
  if (job.deadReason !== undefined) summary.deadReason = job.deadReason;
  return {
    format: RUN_RECORD_FORMAT,
    version: RUN_RECORD_VERSION,
    exportedAt: iso(now),
    job: summary,
    payload: job.payload,
    steps: job.steps.map(({ at, wakeAt, error, ...rest }) => ({
      ...rest,
      at: iso(at),
      ...(wakeAt ? { wakeAt: iso(wakeAt) } : {}),
      ...(error ? { error: exportError(error) } : {}),
    })),
    signals: job.signals.map(({ at, ...rest }) => ({ ...rest, at: iso(at) })),
    errors: job.errors.map(exportError),
  };
}

/** The steps of a run record as the store keeps them (dates as Dates). */
export function importSteps(record: RunRecord): StepRecord[] {
  return record.steps.map(({ at, wakeAt, error, ...rest }) => {
    const step: StepRecord = { ...rest, at: new Date(at) };
    if (wakeAt !== undefined) step.wakeAt = new Date(wakeAt);
    if (error !== undefined) step.error = { ...error, at: new Date(error.at) };
    return step;
  });
}
