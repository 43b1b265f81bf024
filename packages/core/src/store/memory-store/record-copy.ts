import type { JobRecord, Lease } from '../job-record.js';
import { clonePlain } from './clone.js';
import { plainConstructor } from '../../support/plain-constructor.js';

/** A Date of the same instant: stored Dates never leave or enter the store as the same object. */
export const copyDate = (date: Date): Date => new Date(date.getTime());

/**
 * The objects a claim makes per job come from constructors, not object literals (V8 may decide to
 * allocate a literal's objects in the old generation for good; see support/plain-constructor.ts).
 * Empty arrays are `slice`s, for the same reason (an `[]` literal is tracked too).
 */
/** A lease as the store keeps it: the claim's, or a heartbeat's with a new `until` (not copied: the caller gives an owned Date). */
export const StoredLease = plainConstructor(function (this: Lease, owner: string, token: string, until: Date) {
  this.owner = owner;
  this.token = token;
  this.until = until;
});

/**
 * A caller's copy of a stored record, field by field: what `clonePlain(record)` gives, for a
 * third of its cost (bench/README.md, "MemoryStore"). Strings and numbers are shared, Dates and
 * the lease are new objects, and the user's data (payload, result, progress, steps, errors,
 * signals, wait condition, trace) is deep-copied, so nothing done to the copy reaches the store.
 * A field the record does not hold (or holds as `undefined`) is left out, as a database round
 * trip would. `record-copy.test.ts` fails when a field of `JobRecord` is added and not copied here.
 */
export function copyRecord(r: JobRecord): JobRecord {
  return new RecordCopy(r);
}

const RecordCopy = plainConstructor(function (this: JobRecord, r: JobRecord) {
  this.id = r.id;
  this.name = r.name;
  this.queue = r.queue;
  this.payload = clonePlain(r.payload);
  this.status = r.status;
  this.priority = r.priority;
  this.runAt = copyDate(r.runAt);
  this.attempt = r.attempt;
  this.maxAttempts = r.maxAttempts;
  // Empty for most jobs: a new empty array is all a copy of an empty one takes.
  this.errors = r.errors.length === 0 ? r.errors.slice() : clonePlain(r.errors);
  this.steps = r.steps.length === 0 ? r.steps.slice() : clonePlain(r.steps);
  this.signals = r.signals.length === 0 ? r.signals.slice() : clonePlain(r.signals);
  this.createdAt = copyDate(r.createdAt);
  this.updatedAt = copyDate(r.updatedAt);
  if (r.priorAttempts !== undefined) this.priorAttempts = r.priorAttempts;
  if (r.idempotencyKey !== undefined) this.idempotencyKey = r.idempotencyKey;
  if (r.lease !== undefined) this.lease = new StoredLease(r.lease.owner, r.lease.token, copyDate(r.lease.until));
  if (r.waitingFor !== undefined) this.waitingFor = clonePlain(r.waitingFor);
  if (r.result !== undefined) this.result = clonePlain(r.result);
  if (r.progress !== undefined) this.progress = clonePlain(r.progress);
  if (r.parentId !== undefined) this.parentId = r.parentId;
  if (r.scheduledFor !== undefined) this.scheduledFor = copyDate(r.scheduledFor);
  if (r.dependsOn !== undefined) this.dependsOn = [...r.dependsOn];
  if (r.onDependencyFailure !== undefined) this.onDependencyFailure = r.onDependencyFailure;
  if (r.dependents !== undefined) this.dependents = [...r.dependents];
  if (r.trace !== undefined) this.trace = clonePlain(r.trace);
  if (r.startedAt !== undefined) this.startedAt = copyDate(r.startedAt);
  if (r.sleepUntil !== undefined) this.sleepUntil = copyDate(r.sleepUntil);
  if (r.logs !== undefined)
    this.logs = r.logs.map((l) => (l.fields === undefined ? { ...l, at: copyDate(l.at) } : { ...l, at: copyDate(l.at), fields: clonePlain(l.fields) }));
  if (r.finishedAt !== undefined) this.finishedAt = copyDate(r.finishedAt);
  if (r.deadReason !== undefined) this.deadReason = r.deadReason;
  if (r.cancelRequestedAt !== undefined) this.cancelRequestedAt = copyDate(r.cancelRequestedAt);
  if (r.cancelReason !== undefined) this.cancelReason = r.cancelReason;
  if (r.rateLimitKey !== undefined) this.rateLimitKey = r.rateLimitKey;
  if (r.groupKey !== undefined) this.groupKey = r.groupKey;
  if (r.debounceKey !== undefined) this.debounceKey = r.debounceKey;
  if (r.batchId !== undefined) this.batchId = r.batchId;
  if (r.batchCallback !== undefined) this.batchCallback = { batchId: r.batchCallback.batchId, on: r.batchCallback.on };
  if (r.forkedFrom !== undefined) this.forkedFrom = r.forkedFrom;
  if (r.offloadedPayload !== undefined) this.offloadedPayload = { fileId: r.offloadedPayload.fileId, size: r.offloadedPayload.size };
  if (r.offloadedResult !== undefined) this.offloadedResult = { fileId: r.offloadedResult.fileId, size: r.offloadedResult.size };
});
