import { ObjectId, type ClientSession, type Collection } from 'mongodb';
import {
  BATCH_CALLBACKS,
  batchCallbackKey,
  batchCounterOf,
  callbacksToRun,
  type BatchCallbackJobs,
  type BatchRecord,
  type CreatedBatch,
  type JobStatus,
  type NewBatch,
} from '@loom/core';
import { requireDate } from '../arguments.js';
import { inTransaction, type StoreCollections } from '../connection/collections.js';
import type { BatchDocument, JobDocument } from '../schema/documents.js';
import { newJobDocument } from '../schema/updates.js';
import type { OffloadedValues } from '../payloads/offloaded-values.js';
import { StoreArgumentError } from '../store-errors.js';

/**
 * Batches on MongoDB (see `BatchRecord` in `@loom/core`): one document per batch in the batches
 * collection holds its counts and the callbacks to enqueue. Every write that ends a member (or
 * queues a dead or cancelled one again) runs in a transaction with {@link MongoBatches.moved}, so
 * the member's transition, the counter's `$inc` and — for the last member — the batch's
 * `finishedAt` and the callbacks' inserts commit together or not at all. Two members ending at
 * once both `$inc` the one batch document: the server makes one of the transactions retry
 * (a write conflict), so neither end is lost and the end is decided once. Jobs that are in no
 * batch never pay for any of this: their writes' filters say `batchId: { $exists: false }`, and
 * only a member falls through to the transaction.
 */

/** The condition under which a write may take the fast path: the job is in no batch. */
export const NOT_IN_BATCH = { batchId: { $exists: false } } as const;

/** Members inserted per command when a batch is created. */
const INSERT_CHUNK = 1_000;

export class MongoBatches {
  constructor(
    private readonly collections: StoreCollections,
    /** The payload bucket: large member and callback payloads go there (offloaded-values.ts). */
    private readonly values: OffloadedValues,
    /** Puts a new job in its partition (a member spread like any job, a callback by its key); nothing on one partition. */
    private readonly place: (doc: JobDocument) => void = () => undefined,
  ) {}

  private get batches(): Collection<BatchDocument> {
    return this.collections.batches;
  }

  /** Runs `fn` in the caller's transaction when there is one, else in a transaction of its own. */
  within<T>(session: ClientSession | undefined, fn: (session: ClientSession) => Promise<T>): Promise<T> {
    return session ? fn(session) : inTransaction(this.collections, fn);
  }

  /** Stores the batch and its members in one transaction. */
  async create(batch: NewBatch, now: Date): Promise<CreatedBatch> {
    requireDate(now, 'createBatch now');
    if (typeof batch !== 'object' || batch === null || !Array.isArray(batch.jobs))
      throw new StoreArgumentError('createBatch needs { jobs: NewJob[], callbacks }');
    const _id = new ObjectId();
    const batchId = _id.toHexString();
    const docs = batch.jobs.map((job) => {
      const doc = newJobDocument(job, now);
      if (doc.idempotencyKey !== undefined || doc.debounceKey !== undefined) {
        throw new StoreArgumentError(`batch member "${doc.name}" has an idempotency or debounce key; nothing was stored`);
      }
      doc.batchId = batchId;
      this.place(doc);
      return doc;
    });
    const callbacks: BatchCallbackJobs = {};
    for (const on of BATCH_CALLBACKS) {
      const job = batch.callbacks?.[on];
      if (job === undefined) continue;
      this.values.checkPayloads([newJobDocument(job, now)]); // checked now, stored as given
      callbacks[on] = job;
    }
    const files = this.values.preparePayloads(docs);
    const record: BatchDocument = { _id, total: docs.length, completed: 0, dead: 0, cancelled: 0, createdAt: now, callbacks };
    await inTransaction(this.collections, async (session) => {
      await this.batches.insertOne(record, { session });
      await this.values.writeFiles(files, now, session);
      for (let i = 0; i < docs.length; i += INSERT_CHUNK) await this.collections.jobs.insertMany(docs.slice(i, i + INSERT_CHUNK), { session, ordered: true });
      if (docs.length === 0) await this.finish(record, now, session);
    });
    return { id: batchId, jobIds: docs.map((doc) => doc._id.toHexString()) };
  }

  async get(id: string): Promise<BatchRecord | null> {
    const _id = batchObjectId(id);
    if (!_id) return null;
    const doc = await this.batches.findOne({ _id }, { projection: { callbacks: 0 } });
    return doc ? toBatchRecord(doc) : null;
  }

  /** Cancelled members from the jobs' batch index, dead ones from the dead letters' one. */
  async failures(id: string): Promise<string[]> {
    if (typeof id !== 'string') throw new StoreArgumentError('batchFailures id must be a string');
    const [cancelled, dead] = await Promise.all([
      this.collections.jobs.find({ batchId: { $eq: id }, status: 'cancelled' }, { projection: { _id: 1 } }).toArray(),
      this.collections.deadLetters.find({ 'job.batchId': { $eq: id } }, { projection: { _id: 1 } }).toArray(),
    ]);
    return [...dead, ...cancelled].map((doc) => doc._id.toHexString());
  }

  /**
   * Inside `session`'s transaction: member of `batchId` went from `from` to `to`. Until the batch
   * has finished, an end adds to its counter, a dead or cancelled member queued again takes from
   * it, and the end of the last pending member finishes the batch (enqueuing its callbacks).
   */
  async moved(batchId: string, from: JobStatus | undefined, to: JobStatus | undefined, now: Date, session: ClientSession): Promise<void> {
    const _id = batchObjectId(batchId);
    const left = from === undefined ? undefined : batchCounterOf(from);
    const entered = to === undefined ? undefined : batchCounterOf(to);
    if (!_id || left === entered) return;
    const inc: Partial<Record<'completed' | 'dead' | 'cancelled', number>> = {};
    if (left !== undefined) inc[left] = -1;
    if (entered !== undefined) inc[entered] = 1;
    const after = await this.batches.findOneAndUpdate({ _id, finishedAt: { $exists: false } }, { $inc: inc }, { session, returnDocument: 'after' });
    if (after && after.completed + after.dead + after.cancelled === after.total) await this.finish(after, now, session);
  }

  /** Marks the batch finished and inserts its callbacks (the unique key index refuses a second one). */
  private async finish(batch: BatchDocument, now: Date, session: ClientSession): Promise<void> {
    await this.batches.updateOne({ _id: batch._id, finishedAt: { $exists: false } }, { $set: { finishedAt: now } }, { session });
    const batchId = batch._id.toHexString();
    const docs: JobDocument[] = [];
    for (const on of callbacksToRun(batch)) {
      const job = batch.callbacks[on];
      if (job === undefined) continue;
      const doc = newJobDocument({ ...job, idempotencyKey: batchCallbackKey(batchId, on) }, now);
      doc.batchCallback = { batchId, on };
      this.place(doc);
      docs.push(doc);
    }
    if (docs.length === 0) return;
    await this.values.offloadPayloads(docs, now, session);
    await this.collections.jobs.insertMany(docs, { session, ordered: true });
  }
}

function batchObjectId(id: unknown): ObjectId | null {
  if (typeof id !== 'string') throw new StoreArgumentError('a batch id must be a string');
  return ObjectId.isValid(id) && id.length === 24 ? new ObjectId(id) : null;
}

function toBatchRecord(doc: Omit<BatchDocument, 'callbacks'>): BatchRecord {
  const record: BatchRecord = {
    id: doc._id.toHexString(),
    total: doc.total,
    completed: doc.completed,
    dead: doc.dead,
    cancelled: doc.cancelled,
    pending: doc.total - doc.completed - doc.dead - doc.cancelled,
    createdAt: doc.createdAt,
  };
  if (doc.finishedAt !== undefined) record.finishedAt = doc.finishedAt;
  return record;
}
