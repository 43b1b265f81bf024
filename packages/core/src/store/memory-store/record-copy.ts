import type { JobRecord } from '../job-record.js';
import { clonePlain } from './clone.js';

/** A Date of the same instant: stored Dates never leave or enter the store as the same object. */
export const copyDate = (date: Date): Date => new Date(date.getTime());

/**
 * A caller's copy of a stored record, field by field: what `clonePlain(record)` gives, for a
 * third of its cost (bench/README.md, "MemoryStore"). Strings and numbers are shared, Dates and
 * the lease are new objects, and the user's data (payload, result, progress, steps, errors,
 * signals, wait condition, trace) is deep-copied, so nothing done to the copy reaches the store.
 * A field the record does not hold (or holds as `undefined`) is left out, as a database round
 * trip would. `record-copy.test.ts` fails when a field of `JobRecord` is added and not copied here.
 */
export function copyRecord(r: JobRecord): JobRecord {
  const out: JobRecord = {
    id: r.id,
    name: r.name,
    queue: r.queue,
    payload: clonePlain(r.payload),
    status: r.status,
    priority: r.priority,
    runAt: copyDate(r.runAt),
    attempt: r.attempt,
    maxAttempts: r.maxAttempts,
    // Empty for most jobs: a new array is all a copy of an empty one takes.
    errors: r.errors.length === 0 ? [] : clonePlain(r.errors),
    steps: r.steps.length === 0 ? [] : clonePlain(r.steps),
    signals: r.signals.length === 0 ? [] : clonePlain(r.signals),
    createdAt: copyDate(r.createdAt),
    updatedAt: copyDate(r.updatedAt),
  };
  if (r.priorAttempts !== undefined) out.priorAttempts = r.priorAttempts;
  if (r.idempotencyKey !== undefined) out.idempotencyKey = r.idempotencyKey;
  if (r.lease !== undefined) out.lease = { owner: r.lease.owner, token: r.lease.token, until: copyDate(r.lease.until) };
  if (r.waitingFor !== undefined) out.waitingFor = clonePlain(r.waitingFor);
  if (r.result !== undefined) out.result = clonePlain(r.result);
  if (r.progress !== undefined) out.progress = clonePlain(r.progress);
  if (r.parentId !== undefined) out.parentId = r.parentId;
  if (r.scheduledFor !== undefined) out.scheduledFor = copyDate(r.scheduledFor);
  if (r.dependsOn !== undefined) out.dependsOn = [...r.dependsOn];
  if (r.onDependencyFailure !== undefined) out.onDependencyFailure = r.onDependencyFailure;
  if (r.dependents !== undefined) out.dependents = [...r.dependents];
  if (r.trace !== undefined) out.trace = clonePlain(r.trace);
  if (r.startedAt !== undefined) out.startedAt = copyDate(r.startedAt);
  if (r.sleepUntil !== undefined) out.sleepUntil = copyDate(r.sleepUntil);
  if (r.logs !== undefined)
    out.logs = r.logs.map((l) => (l.fields === undefined ? { ...l, at: copyDate(l.at) } : { ...l, at: copyDate(l.at), fields: clonePlain(l.fields) }));
  if (r.finishedAt !== undefined) out.finishedAt = copyDate(r.finishedAt);
  if (r.deadReason !== undefined) out.deadReason = r.deadReason;
  if (r.cancelRequestedAt !== undefined) out.cancelRequestedAt = copyDate(r.cancelRequestedAt);
  if (r.cancelReason !== undefined) out.cancelReason = r.cancelReason;
  if (r.rateLimitKey !== undefined) out.rateLimitKey = r.rateLimitKey;
  if (r.groupKey !== undefined) out.groupKey = r.groupKey;
  if (r.debounceKey !== undefined) out.debounceKey = r.debounceKey;
  if (r.batchId !== undefined) out.batchId = r.batchId;
  if (r.batchCallback !== undefined) out.batchCallback = { batchId: r.batchCallback.batchId, on: r.batchCallback.on };
  if (r.forkedFrom !== undefined) out.forkedFrom = r.forkedFrom;
  if (r.offloadedPayload !== undefined) out.offloadedPayload = { fileId: r.offloadedPayload.fileId, size: r.offloadedPayload.size };
  if (r.offloadedResult !== undefined) out.offloadedResult = { fileId: r.offloadedResult.fileId, size: r.offloadedResult.size };
  return out;
}
