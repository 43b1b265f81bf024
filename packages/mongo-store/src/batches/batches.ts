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
import type { BatchDocument, BatchStripeDocument, JobDocument } from '../schema/documents.js';
import { newJobDocument } from '../schema/updates.js';
import type { OffloadedValues } from '../payloads/offloaded-values.js';
import { StoreArgumentError, StoreOperationError } from '../store-errors.js';

/**
 * Batches on MongoDB (see `BatchRecord` in `@loom/core`): one document per batch in the batches
 * collection holds its total and the callbacks to enqueue, and up to {@link STRIPES} stripe
 * documents beside it hold its counts, each for the members whose id falls in that stripe. Every
 * write that ends a member (or queues a dead or cancelled one again) runs in a transaction with
 * {@link MongoBatches.moved}, so the member's transition, its stripe's `$inc` and — for the last
 * member — the batch's `finishedAt` and the callbacks' inserts commit together or not at all.
 *
 * Why stripes: two transactions that write one document conflict and one of them retries from
 * the start. With one counter per batch, 50 members ending at once made ~25 commands per member
 * end (bench `--only dag`); spread over stripes, members mostly write different documents. The
 * batch document itself is written only when a stripe becomes complete (or incomplete again):
 * `stripesDone` counts those, and the transaction that completes the last stripe finishes the
 * batch. Each rule is decided on one document's serialised writes, so no end is lost and the end
 * is decided once. Jobs in no batch never pay for any of this: their writes' filters say
 * `batchId: { $exists: false }`, and only a member falls through to the transaction.
 */

/** Stripe documents per batch (fewer when the batch has fewer members). */
export const STRIPES = 32;

/** The stripe a member's counts live in: from its id, so every write of the member finds it without a read. */
export function stripeOf(memberId: string): number {
  const tail = Number.parseInt(memberId.slice(-4), 16);
  if (Number.isFinite(tail)) return tail % STRIPES;
  let sum = 0;
  for (let i = 0; i < memberId.length; i++) sum += memberId.charCodeAt(i);
  return sum % STRIPES;
}

/** The `_id` of a batch's stripe document (a string: it never meets a batch's ObjectId). */
function stripeId(batchId: string, stripe: number): string {
  return `${batchId}/${stripe}`;
}

/** The stripe number in a stripe document's `_id`. */
function stripeNumberOf(id: string): number {
  return Number(id.slice(id.lastIndexOf('/') + 1));
}

/**
 * How a stripe's completeness changed when `delta` members ended (negative: queued again), read on
 * the stripe after the change: 1 if it became complete, -1 if it stopped being so, else 0.
 */
function doneChange(stripe: BatchStripeDocument, delta: number): number {
  const ended = stripe.completed + stripe.dead + stripe.cancelled;
  return Number(ended === stripe.total) - Number(ended - delta === stripe.total);
}

type Counter = 'completed' | 'dead' | 'cancelled';

/** The condition under which a write may take the fast path: the job is in no batch. */
export const NOT_IN_BATCH = { batchId: { $exists: false } } as const;

/** The counters of a batch (and of each stripe). */
const BATCH_COUNTERS: readonly Counter[] = ['completed', 'dead', 'cancelled'];

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

  /** The same collection, seen as its stripe documents. */
  private get stripes(): Collection<BatchStripeDocument> {
    return this.collections.batches as unknown as Collection<BatchStripeDocument>;
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
    const stripes = new Map<number, BatchStripeDocument>();
    for (const doc of docs) {
      const k = stripeOf(doc._id.toHexString());
      const stripe = stripes.get(k) ?? { _id: stripeId(batchId, k), total: 0, completed: 0, dead: 0, cancelled: 0 };
      stripe.total++;
      stripes.set(k, stripe);
    }
    const files = this.values.preparePayloads(docs);
    const record: BatchDocument = {
      _id,
      total: docs.length,
      completed: 0,
      dead: 0,
      cancelled: 0,
      stripes: [...stripes.keys()].sort((a, b) => a - b),
      stripesDone: 0,
      createdAt: now,
      callbacks,
    };
    await inTransaction(this.collections, async (session) => {
      await this.batches.insertOne(record, { session });
      if (stripes.size > 0) await this.stripes.insertMany([...stripes.values()], { session, ordered: true });
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
    if (!doc) return null;
    // Until it finishes, a striped batch's counts are in its stripes (the finish writes their sums).
    return toBatchRecord(doc.finishedAt === undefined && doc.stripes ? { ...doc, ...(await this.counts(id, doc.stripes)) } : doc);
  }

  /** The sums of a batch's stripes (read in `session`'s snapshot when given). */
  private async counts(batchId: string, stripes: number[], session?: ClientSession): Promise<Record<Counter, number>> {
    const docs = await this.stripes.find({ _id: { $in: stripes.map((k) => stripeId(batchId, k)) } }, { session }).toArray();
    const sum = { completed: 0, dead: 0, cancelled: 0 };
    for (const doc of docs) for (const k of BATCH_COUNTERS) sum[k] += doc[k];
    return sum;
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
   * Inside `session`'s transaction: member `memberId` of `batchId` went from `from` to `to`. Until
   * the batch has finished, an end adds to its stripe's counter, a dead or cancelled member queued
   * again takes from it, and the end of the last pending member finishes the batch (enqueuing its
   * callbacks).
   */
  async moved(batchId: string, memberId: ObjectId, from: JobStatus | undefined, to: JobStatus | undefined, now: Date, session: ClientSession): Promise<void> {
    const _id = batchObjectId(batchId);
    const left = from === undefined ? undefined : batchCounterOf(from);
    const entered = to === undefined ? undefined : batchCounterOf(to);
    if (!_id || left === entered) return;
    const inc: Partial<Record<Counter, number>> = {};
    if (left !== undefined) inc[left] = -1;
    if (entered !== undefined) inc[entered] = 1;
    const stripe = await this.stripes.findOneAndUpdate(
      { _id: stripeId(batchId, stripeOf(memberId.toHexString())), finished: { $exists: false } },
      { $inc: inc },
      { session, returnDocument: 'after' },
    );
    if (!stripe) {
      // Finished (its stripes say so), or a batch stored before stripes: its counts are on it.
      const after = await this.batches.findOneAndUpdate(
        { _id, finishedAt: { $exists: false }, stripes: { $exists: false } },
        { $inc: inc },
        { session, returnDocument: 'after' },
      );
      if (after && after.completed + after.dead + after.cancelled === after.total) await this.finish(after, now, session);
      return;
    }
    const delta = (entered === undefined ? 0 : 1) - (left === undefined ? 0 : 1);
    await this.stripesDone(_id, doneChange(stripe, delta), now, session);
  }

  /**
   * {@link moved} for several members of one batch that made the same move, in one transaction
   * (`session`'s): one `$inc` per stripe they fall in, sent as one bulk write, one read of those
   * stripes, and at most one write of the batch. What the group commit of completions uses for the
   * members of one batch it completes together (complete-many.ts).
   */
  async movedMany(batchId: string, memberIds: ObjectId[], from: JobStatus, to: JobStatus, now: Date, session: ClientSession): Promise<void> {
    const _id = batchObjectId(batchId);
    const left = batchCounterOf(from);
    const entered = batchCounterOf(to);
    if (!_id || left === entered) return;
    const perStripe = new Map<number, number>();
    for (const id of memberIds) {
      const k = stripeOf(id.toHexString());
      perStripe.set(k, (perStripe.get(k) ?? 0) + 1);
    }
    const incOf = (n: number): Partial<Record<Counter, number>> => ({
      ...(left === undefined ? {} : { [left]: -n }),
      ...(entered === undefined ? {} : { [entered]: n }),
    });
    const written = await this.stripes.bulkWrite(
      [...perStripe].map(([k, n]) => ({ updateOne: { filter: { _id: stripeId(batchId, k), finished: { $exists: false } }, update: { $inc: incOf(n) } } })),
      { session, ordered: true },
    );
    if (written.matchedCount === 0) {
      // Finished (every stripe says so at once), or a batch stored before stripes: one at a time.
      for (const id of memberIds) await this.moved(batchId, id, from, to, now, session);
      return;
    }
    if (written.matchedCount !== perStripe.size)
      throw new StoreOperationError(`batch ${batchId} has stripes that are finished and stripes that are not; its members were not counted`);
    const stripes = await this.stripes.find({ _id: { $in: [...perStripe.keys()].map((k) => stripeId(batchId, k)) } }, { session }).toArray();
    const perMember = (entered === undefined ? 0 : 1) - (left === undefined ? 0 : 1);
    let change = 0;
    for (const stripe of stripes) change += doneChange(stripe, perMember * perStripe.get(stripeNumberOf(stripe._id))!);
    await this.stripesDone(_id, change, now, session);
  }

  /** Adds `change` stripes to those of batch `_id` that are complete; the one that makes them all finishes it. */
  private async stripesDone(_id: ObjectId, change: number, now: Date, session: ClientSession): Promise<void> {
    if (change === 0) return;
    const after = await this.batches.findOneAndUpdate(
      { _id, finishedAt: { $exists: false } },
      { $inc: { stripesDone: change } },
      { session, returnDocument: 'after' },
    );
    if (after?.stripes && after.stripesDone === after.stripes.length)
      await this.finish({ ...after, ...(await this.counts(_id.toHexString(), after.stripes, session)) }, now, session);
  }

  /** Marks the batch finished and inserts its callbacks (the unique key index refuses a second one). */
  private async finish(batch: BatchDocument, now: Date, session: ClientSession): Promise<void> {
    const { completed, dead, cancelled } = batch;
    await this.batches.updateOne({ _id: batch._id, finishedAt: { $exists: false } }, { $set: { finishedAt: now, completed, dead, cancelled } }, { session });
    const batchId = batch._id.toHexString();
    // The stripes stop counting with the batch: a member queued again after the end changes nothing.
    if (batch.stripes?.length)
      await this.stripes.updateMany({ _id: { $in: batch.stripes.map((k) => stripeId(batchId, k)) } }, { $set: { finished: true } }, { session });
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
