/** The stored record of a new job: what every enqueue (and a batch's end, for its callbacks) inserts. */
import type { JobRecord, NewJob } from '../job-record.js';
import { clonePlain } from './clone.js';
import { copyDate } from './record-copy.js';
import { newJobId } from './job-id.js';

export function newRecord(job: NewJob, now: Date): JobRecord {
  const record: JobRecord = {
    id: newJobId(),
    name: job.name,
    queue: job.queue,
    payload: clonePlain(job.payload),
    status: 'queued',
    priority: job.priority,
    runAt: copyDate(job.runAt),
    attempt: 0,
    maxAttempts: job.maxAttempts,
    errors: [],
    steps: job.steps === undefined ? [] : clonePlain(job.steps),
    signals: [],
    createdAt: copyDate(now),
    updatedAt: copyDate(now),
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
