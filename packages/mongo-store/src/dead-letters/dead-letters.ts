import type { ClientSession, Collection, Filter, ObjectId } from 'mongodb';
import { holdsLease, type ErrorRecord, type LeaseRef } from '@loom/core';
import { inTransaction, withSession, type StoreCollections } from '../connection/collections.js';
import type { DeadLetterDocument } from '../schema/documents.js';
import { fenceRefusal } from '../writes/fenced-writes.js';
import { fencedFilter } from '../schema/filters.js';
import { DEAD_LETTER_INDEX } from '../schema/indexes.js';
import type { StoreLogger } from '../options.js';
import { isDuplicateKey, StoreArgumentError } from '../store-errors.js';
import { deadLetterDocument, replayedJobDocument } from '../schema/updates.js';
import { fitDeadLetter } from './dead-letter-size.js';
import { releaseChildren } from '../writes/retention-holds.js';
import type { MongoBatches } from '../batches/batches.js';

/**
 * Moving jobs between the jobs and dead-letter collections. On a replica set each move is one
 * transaction. On a standalone it is idempotent steps keyed by the job's own `_id` (write the dead
 * letter marked `pending`, delete the fenced job, unmark; or mark, insert the job, delete the
 * letter that was read); a crash in between leaves a marked letter, which
 * {@link reconcileDeadLetters} resolves at the next `init()`.
 */

export interface MoveContext {
  collections: StoreCollections;
  transactional: boolean;
  logger: StoreLogger;
  /** Moves the counts of a batch member's batch in the move's transaction (replica set only: batches need transactions). */
  batches?: MongoBatches;
}

/** Runs `fn` in a transaction on a replica set, or directly (no session) on a standalone. */
async function maybeTransaction<T>(ctx: MoveContext, fn: (session?: ClientSession) => Promise<T>): Promise<T> {
  if (!ctx.transactional) return fn();
  return inTransaction(ctx.collections, fn);
}

/** `running → dead`, fenced by the lease. */
export async function moveToDeadLetters(
  ctx: MoveContext,
  id: ObjectId,
  lease: LeaseRef,
  outcome: { reason: string; error?: ErrorRecord; now: Date },
): Promise<void> {
  const { jobs, deadLetters } = ctx.collections;
  const fence = fencedFilter('deadLetter', id, lease.token);
  const unmark = () => deadLetters.updateOne({ _id: id, leaseToken: lease.token }, { $unset: { pending: '' } });
  await maybeTransaction(ctx, async (session) => {
    const job = await jobs.findOne(fence, withSession(session));
    if (!job) throw await fenceRefusal(jobs, id, lease, session);
    // A dead parent waits for nothing any more: its children's retention holds go, in the move's
    // own transaction on a replica set (see retention-holds.ts).
    if (job.steps?.some((step) => step.kind === 'enqueue')) await releaseChildren(jobs, id, session);
    const dead = fitDeadLetter(deadLetterDocument(job, outcome));
    if (!session) dead.pending = 'move';
    await deadLetters.replaceOne({ _id: id }, dead, { upsert: true, ...withSession(session) });
    const deleted = await jobs.deleteOne(fence, withSession(session));
    if (deleted.deletedCount === 1) {
      if (!session) await unmark();
      else if (job.batchId !== undefined) await ctx.batches?.moved(job.batchId, id, 'running', 'dead', outcome.now, session);
      return;
    }
    if (session) throw await fenceRefusal(jobs, id, lease, session); // aborts the transaction: nothing changed
    // Standalone: the job moved on between our read and delete (its lease expired and another
    // worker took it, or its cancel was requested), or a concurrent init() finished this very move.
    const still = await jobs.findOne({ _id: id }, { projection: { _id: 1 } });
    if (!still) return void (await unmark());
    await deadLetters.deleteOne({ _id: id, leaseToken: lease.token });
    throw await fenceRefusal(jobs, id, lease);
  });
}

/** Letters deleted per command by {@link purgeNewestDeadLetters}. */
const PURGE_BATCH = 500;

/**
 * Purges the newest `limit` dead letters matching `where` (newest death first): reads the identity
 * of each — its id, the lease token that moved it and its death time — and deletes only those very
 * letters. Between the read and the delete a letter can be replayed and its job die again: the new
 * letter has the same id but another lease token, and it is not the one this purge chose, so it stays.
 */
export async function purgeNewestDeadLetters(
  deadLetters: Collection<DeadLetterDocument>,
  where: Filter<DeadLetterDocument>,
  limit: number,
  hint: string,
): Promise<number> {
  const read = await deadLetters.find(where, { sort: { diedAt: -1, _id: -1 }, limit, projection: { _id: 1, leaseToken: 1, diedAt: 1 }, hint }).toArray();
  let deleted = 0;
  for (let i = 0; i < read.length; i += PURGE_BATCH) {
    const letters = read.slice(i, i + PURGE_BATCH).map(({ _id, leaseToken, diedAt }) => ({ _id, leaseToken: leaseToken ?? null, diedAt }));
    deleted += (await deadLetters.deleteMany({ $or: letters })).deletedCount;
  }
  return deleted;
}

/**
 * `dead → queued`, same id, attempts reset. Conditional: of two concurrent replays one inserts the
 * job and the other finds the id taken (or the dead letter gone) and returns null. On a standalone
 * it deletes only the letter it read (matched by its lease token): once the job is back in the
 * queue it can run and die again, and that next death's letter must survive this replay.
 */
export async function replayDeadLetter(ctx: MoveContext, id: ObjectId, now: Date): Promise<string | null> {
  const { jobs, deadLetters } = ctx.collections;
  return maybeTransaction(ctx, async (session) => {
    const dead = session ? await deadLetters.findOneAndDelete({ _id: id }, { session }) : await deadLetters.findOne({ _id: id });
    if (!dead) return null;
    const key = dead.job.idempotencyKey;
    const keyHeld = (cause?: unknown) =>
      new StoreArgumentError(
        `Dead letter ${id.toHexString()} cannot be replayed: its idempotency key ${JSON.stringify(key)} is now held by another job; ` +
          'nothing changed. Let that job finish, or purge this dead letter if it is obsolete',
        { cause },
      );
    if (key !== undefined) {
      // Checked first because inside a transaction a duplicate-key error would abort it.
      const holder = await jobs.findOne({ idempotencyKey: { $eq: key } }, { projection: { _id: 1 }, ...withSession(session) });
      if (holder && !holder._id.equals(id)) throw keyHeld();
    }
    const theLetterRead = { _id: id, leaseToken: dead.leaseToken };
    if (!session && (await deadLetters.updateOne(theLetterRead, { $set: { pending: 'replay' } })).matchedCount === 0) {
      return null; // replayed (or purged) concurrently
    }
    try {
      await jobs.insertOne(replayedJobDocument(dead, now), withSession(session));
    } catch (err) {
      if (session || !isDuplicateKey(err)) throw err;
      const byId = await jobs.findOne({ _id: id }, { projection: { _id: 1 } });
      if (byId) return null; // replayed concurrently (or a half-done move that init() resolves)
      await deadLetters.updateOne(theLetterRead, { $unset: { pending: '' } });
      throw keyHeld(err);
    }
    if (!session) await deadLetters.deleteOne(theLetterRead);
    else if (dead.job.batchId !== undefined) await ctx.batches?.moved(dead.job.batchId, id, 'dead', 'queued', now, session);
    return id.toHexString();
  });
}

/** What a reconciliation did. */
export interface ReconcileReport {
  /** Half-done moves to the dead letters that were finished (the job deleted). */
  finishedMoves: number;
  /** Dead letters whose job lives on (a replay, or a move that lost its lease) that were deleted. */
  staleDeadLetters: number;
}

const RECONCILE_BATCH = 500;

/**
 * Resolves the moves a crash interrupted: only the dead letters still marked `pending` (a partial
 * index holds exactly those), so a start costs the same with ten dead letters or ten million, and
 * on a replica set (transactional moves never mark) it reads none. For each: a job still running
 * under the lease that moved it was being dead-lettered when the process died, so the move is
 * finished; any other job of that id (replayed, or taken over by another worker) is the live copy,
 * so the dead letter goes; without a job the letter is simply dead, and only unmarked.
 */
export async function reconcileDeadLetters(ctx: MoveContext): Promise<ReconcileReport> {
  const { jobs, deadLetters } = ctx.collections;
  const report: ReconcileReport = { finishedMoves: 0, staleDeadLetters: 0 };
  const cursor = deadLetters
    .find({ pending: { $exists: true } }, { projection: { _id: 1, leaseToken: 1 }, hint: DEAD_LETTER_INDEX.pending })
    .batchSize(RECONCILE_BATCH);
  let batch: Pick<DeadLetterDocument, '_id' | 'leaseToken'>[] = [];
  const flush = async () => {
    const live = await jobs.find({ _id: { $in: batch.map((d) => d._id) } }, { projection: { _id: 1, status: 1, 'lease.token': 1 } }).toArray();
    for (const dead of batch) {
      const job = live.find((j) => j._id.equals(dead._id));
      const letter = { _id: dead._id, leaseToken: dead.leaseToken };
      if (job && !holdsLease(job, { jobId: job._id.toHexString(), token: dead.leaseToken })) {
        report.staleDeadLetters += (await deadLetters.deleteOne(letter)).deletedCount;
        continue;
      }
      if (job) report.finishedMoves += (await jobs.deleteOne(fencedFilter('holds', job._id, dead.leaseToken))).deletedCount;
      await deadLetters.updateOne(letter, { $unset: { pending: '' } });
    }
    batch = [];
  };
  for await (const doc of cursor) {
    batch.push(doc);
    if (batch.length === RECONCILE_BATCH) await flush();
  }
  if (batch.length > 0) await flush();
  if (report.finishedMoves + report.staleDeadLetters > 0) {
    ctx.logger.warn({ ...report }, 'reconciled jobs found in both the jobs and dead-letter collections (an interrupted move)');
  }
  return report;
}
