import {
  JOB_SUMMARY_OPTIONAL_FIELDS,
  toJobSummary,
  type DeadLetter,
  type JobRecord,
  type JobSummary,
  type ScheduleRecord,
  type SignalRecord,
} from '@loom/core';
import type { ObjectId } from 'mongodb';
import type { DeadLetterDocument, JobDocument, ScheduleDocument, StoredSignal, StoredValueRef } from './documents.js';

/** Stored documents → the store-neutral records of `@loom/core` (string ids, no internal fields). */

const OPTIONAL_FIELDS = [
  'idempotencyKey',
  'lease',
  'waitingFor',
  'result',
  'progress',
  'parentId',
  'scheduledFor',
  'trace',
  'startedAt',
  'sleepUntil',
  'logs',
  'finishedAt',
  'deadReason',
  'cancelRequestedAt',
  'cancelReason',
  'priorAttempts',
  'rateLimitKey',
  'groupKey',
  'debounceKey',
  'batchId',
  'batchCallback',
  'forkedFrom',
  'dependsOn',
  'onDependencyFailure',
  'dependents',
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
  // Values in the payload bucket: the reference here; getJob and claims load the value (offloaded-values.ts).
  if (doc.payloadRef !== undefined) {
    record.payload = undefined;
    record.offloadedPayload = { fileId: doc.payloadRef.fileId.toHexString(), size: doc.payloadRef.size };
  }
  if (doc.resultRef !== undefined) record.offloadedResult = { fileId: doc.resultRef.fileId.toHexString(), size: doc.resultRef.size };
  // A completed job retention must not remove yet keeps its finish time aside (retention-holds.ts).
  if (doc.heldFinishedAt !== undefined && record.finishedAt === undefined) record.finishedAt = doc.heldFinishedAt;
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
  const record: ScheduleRecord = {
    name: doc._id,
    lastFireAt: doc.lastFireAt ?? null,
    firstSeenAt: doc.firstSeenAt,
    firing: doc.firing ?? [],
    paused: doc.paused,
    updatedAt: doc.updatedAt,
  };
  if (doc.description !== undefined) record.description = doc.description;
  return record;
}

/** The stored fields a {@link JobSummary} is made of: what list pages fetch (never payloads or results). */
export const SUMMARY_FIELDS = [
  'name',
  'queue',
  'status',
  'priority',
  'attempt',
  'maxAttempts',
  'runAt',
  'createdAt',
  'updatedAt',
  ...JOB_SUMMARY_OPTIONAL_FIELDS,
] as const;

/** The sizes of offloaded values a summary gives (never the values: a page reads no payload). */
const SIZE_FIELDS = ['payloadRef.size', 'resultRef.size'];

/** Projection of a page of live jobs (with the finish time a retention hold keeps aside). */
export const JOB_SUMMARY_PROJECTION = { ...Object.fromEntries([...SUMMARY_FIELDS, ...SIZE_FIELDS].map((f) => [f, 1])), heldFinishedAt: 1 };
/** Projection of a page of dead letters (the job is kept under `job`). */
export const DEAD_LETTER_SUMMARY_PROJECTION = Object.fromEntries([...SUMMARY_FIELDS, ...SIZE_FIELDS].map((f) => [`job.${f}`, 1]));

type SummaryFields = Pick<JobDocument, (typeof SUMMARY_FIELDS)[number]> & {
  payloadRef?: Partial<StoredValueRef>;
  resultRef?: Partial<StoredValueRef>;
};

/** The summary of `fields`, with the sizes of its offloaded values. */
function summaryOf(id: ObjectId, fields: SummaryFields): JobSummary {
  const { payloadRef, resultRef, ...rest } = fields;
  const summary = toJobSummary({ ...rest, id: id.toHexString() });
  if (payloadRef?.size !== undefined) summary.payloadSize = payloadRef.size;
  if (resultRef?.size !== undefined) summary.resultSize = resultRef.size;
  return summary;
}

/** A live job (fetched with {@link JOB_SUMMARY_PROJECTION}) as a summary. */
export function toJobSummaryOf(doc: Pick<JobDocument, '_id' | 'heldFinishedAt'> & SummaryFields): JobSummary {
  const { heldFinishedAt, _id, ...fields } = doc;
  const finishedAt = fields.finishedAt ?? heldFinishedAt;
  return summaryOf(_id, { ...fields, ...(finishedAt === undefined ? {} : { finishedAt }) });
}

/** A dead letter (fetched with {@link DEAD_LETTER_SUMMARY_PROJECTION}) as a summary. */
export function toDeadJobSummary(doc: { _id: DeadLetterDocument['_id']; job: SummaryFields }): JobSummary {
  return summaryOf(doc._id, doc.job);
}
