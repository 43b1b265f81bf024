import type { DeadLetter, JobRecord, ScheduleRecord, SignalRecord } from '@loom/core';
import type { DeadLetterDocument, JobDocument, ScheduleDocument, StoredSignal } from './documents.js';

/** Stored documents → the store-neutral records of `@loom/core` (string ids, no internal fields). */

const OPTIONAL_FIELDS = [
  'idempotencyKey',
  'lease',
  'waitingFor',
  'result',
  'progress',
  'parentId',
  'scheduledFor',
  'startedAt',
  'finishedAt',
  'deadReason',
] as const satisfies readonly (keyof JobRecord & keyof JobDocument)[];

function toSignal({ name, data, at, id }: StoredSignal): SignalRecord {
  return id === undefined ? { name, data, at } : { name, data, at, id };
}

function toRecord(id: string, doc: Omit<JobDocument, '_id'>): JobRecord {
  const record: JobRecord = {
    id,
    name: doc.name,
    queue: doc.queue,
    payload: doc.payload,
    status: doc.status,
    priority: doc.priority,
    runAt: doc.runAt,
    attempt: doc.attempt,
    maxAttempts: doc.maxAttempts,
    errors: doc.errors ?? [],
    steps: doc.steps ?? [],
    signals: (doc.signals ?? []).map(toSignal),
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
  };
  for (const field of OPTIONAL_FIELDS) {
    if (doc[field] !== undefined) (record as unknown as Record<string, unknown>)[field] = doc[field];
  }
  return record;
}

/** A live job. */
export function toJobRecord(doc: JobDocument): JobRecord {
  return toRecord(doc._id.toHexString(), doc);
}

/** A dead letter's job, as `getJob` and `listJobs` show it (status `dead`). */
export function toDeadJobRecord(doc: DeadLetterDocument): JobRecord {
  return toRecord(doc._id.toHexString(), doc.job);
}

/** A dead letter. */
export function toDeadLetter(doc: DeadLetterDocument): DeadLetter {
  return { id: doc._id.toHexString(), job: toDeadJobRecord(doc), reason: doc.reason, diedAt: doc.diedAt };
}

/** A schedule's state. */
export function toScheduleRecord(doc: ScheduleDocument): ScheduleRecord {
  return { name: doc._id, lastFireAt: doc.lastFireAt ?? null, firstSeenAt: doc.firstSeenAt, firing: doc.firing ?? [], paused: doc.paused, updatedAt: doc.updatedAt };
}
