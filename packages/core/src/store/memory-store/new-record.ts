import type { JobRecord, NewJob } from '../job-record.js';
import { clonePlain } from './clone.js';
import { copyDate } from './record-copy.js';
import { newJobId } from './job-id.js';

/**
 * The stored record of a new job: what every enqueue (and a batch's end, for its callbacks) inserts.
 * `at`: a copy of `now` the store owns, which the records of one enqueue share as their
 * `createdAt`, `updatedAt` and (when due at once) `runAt`: stored Dates are never changed in
 * place and copies go out, so sharing them is safe, and three Dates per queued job were about a
 * third of the memory the store keeps for it (bench/README.md, "Issue 33 items 2/3: pretenuring,
 * one map of jobs (7 December)").
 */
export function newRecord(job: NewJob, now: Date, at = copyDate(now)): JobRecord {
  const record: JobRecord = {
    id: newJobId(),
    name: job.name,
    queue: job.queue,
    payload: clonePlain(job.payload),
    status: 'queued',
    priority: job.priority,
    runAt: job.runAt.getTime() === at.getTime() ? at : copyDate(job.runAt),
    attempt: 0,
    maxAttempts: job.maxAttempts,
    errors: [],
    steps: job.steps === undefined ? [] : clonePlain(job.steps),
    signals: [],
    createdAt: at,
    updatedAt: at,
    // Set by every run (undefined again once it ended): held from the start, so a record keeps one
    // shape through its life and the engine's hot path sees one hidden class, not one per state.
    lease: undefined,
    startedAt: undefined,
    finishedAt: undefined,
  };
  if (job.idempotencyKey !== undefined) record.idempotencyKey = job.idempotencyKey;
  if (job.parentId !== undefined) record.parentId = job.parentId;
  if (job.scheduledFor !== undefined) record.scheduledFor = copyDate(job.scheduledFor);
  if (job.trace !== undefined) record.trace = clonePlain(job.trace);
  if (job.rateLimitKey !== undefined) record.rateLimitKey = job.rateLimitKey;
  if (job.groupKey !== undefined) record.groupKey = job.groupKey;
  if (job.debounceKey !== undefined) record.debounceKey = job.debounceKey;
  if (job.forkedFrom !== undefined) record.forkedFrom = job.forkedFrom;
  return record;
}
