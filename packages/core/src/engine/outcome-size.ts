import { JobTooLargeError } from '../support/errors.js';
import { MAX_PLAIN_DATA_BYTES, plainDataSize } from '../support/plain-data.js';
import type { JobRecord } from '../store/job-record.js';
import { recordBytesOf, type PayloadLimits } from '../store/payload-limits.js';

/**
 * The most a completed job's record may hold, as estimated BSON: MongoDB's 16 MiB document limit
 * less 64 KiB for the engine's own fields (ids, dates, lease, status).
 */
export const MAX_JOB_RECORD_BYTES = MAX_PLAIN_DATA_BYTES - 64 * 1024;

/**
 * Checks, before `complete` is written, that the job's record with its result still fits: payload,
 * steps (those it was claimed with plus `stepBytesAdded` recorded by this run), errors, signals and
 * result together — each alone can be within its limit while the sum is not. A payload or result
 * the store keeps outside the record (over `limits.offloadThreshold`) counts as its reference.
 * `payloadBytes`: the payload's size when the caller measured it already (the run's payload check).
 * Returns the error that fails the attempt, or null.
 */
export function completedJobTooLarge(
  job: JobRecord,
  stepBytesAdded: number,
  result: unknown,
  limits?: PayloadLimits,
  payloadBytes?: number,
): JobTooLargeError | null {
  const inRecord = (size: number): number => (limits ? recordBytesOf(size, limits) : size);
  const parts = {
    payload: inRecord(job.offloadedPayload?.size ?? payloadBytes ?? plainDataSize(job.payload) ?? 0),
    steps: (plainDataSize(job.steps) ?? 0) + stepBytesAdded,
    errors: plainDataSize(job.errors) ?? 0,
    signals: plainDataSize(job.signals) ?? 0,
    result: result === undefined ? 0 : inRecord(plainDataSize(result) ?? 0),
  };
  const total = parts.payload + parts.steps + parts.errors + parts.signals + parts.result;
  if (total <= MAX_JOB_RECORD_BYTES) return null;
  const detail = Object.entries(parts)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return new JobTooLargeError(
    job.id,
    `its result would make the stored job about ${total} bytes (${detail}), over the ${MAX_JOB_RECORD_BYTES}-byte limit of one job record`,
  );
}
