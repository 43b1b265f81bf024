import type { AnyBulkWriteOperation, ClientSession, Collection, Filter, UpdateFilter } from 'mongodb';
import type { LeaseRef } from '@loom/core';
import { withSession } from '../connection/collections.js';
import type { JobDocument } from '../schema/documents.js';
import { fencedFilter } from '../schema/filters.js';
import { tooManyRounds } from '../store-errors.js';
import { MAX_CONDITIONAL_ROUNDS, type FencedWrites } from './fenced-writes.js';
import { HELD, releaseChildren, UNHELD } from './retention-holds.js';
import { NOT_IN_BATCH, type MongoBatches } from '../batches/batches.js';

/**
 * `running → completed`: the statements of a completion, for one job (`complete`) or many
 * (`completeMany`). A completed job may be under a retention hold (see retention-holds.ts), so
 * each completion is two statements whose filters exclude each other: one for a job without a
 * hold (it gets `finishedAt`, which the retention index sees) and one for a held job (its finish
 * time goes to `heldFinishedAt`).
 */

/**
 * A parent's children are released before the parent finishes; the completion write only takes
 * the fast path for jobs that enqueued none (`ctx.enqueue` records an `enqueue` step).
 */
const NO_CHILDREN: Filter<JobDocument> = { 'steps.kind': { $ne: 'enqueue' } };

/**
 * Writes the completion `update` (which sets `finishedAt`) on a fenced running job: as is when it
 * is not held, with `finishedAt` kept in `heldFinishedAt` when it is. One `update` command of two
 * statements whose filters exclude each other, so the matched count says whether the fence held.
 */
async function completeHeldOrNot(
  jobs: Collection<JobDocument>,
  fence: Filter<JobDocument>,
  update: UpdateFilter<JobDocument> & { $set: Partial<JobDocument> },
  session: ClientSession | undefined,
): Promise<boolean> {
  const res = await jobs.bulkWrite(completionStatements(fence, update), { ordered: true, ...withSession(session) });
  return res.matchedCount === 1;
}

/**
 * The two statements of one completion (see {@link completeHeldOrNot}): at most one matches.
 * `childless` adds the fast path's condition (the job enqueued no children to release first).
 * `many`: the fence matches many jobs (`fencedManyFilter`), each completed by the same update.
 */
export function completionStatements(
  fence: Filter<JobDocument>,
  update: UpdateFilter<JobDocument> & { $set: Partial<JobDocument> },
  childless = false,
  many = false,
): AnyBulkWriteOperation<JobDocument>[] {
  const { finishedAt, ...set } = update.$set;
  const held: UpdateFilter<JobDocument> = { ...update, $set: { ...set, heldFinishedAt: finishedAt } };
  const filter = childless ? { ...fence, ...NO_CHILDREN, ...NOT_IN_BATCH } : fence;
  if (many) {
    return [{ updateMany: { filter: { ...filter, ...UNHELD }, update } }, { updateMany: { filter: { ...filter, ...HELD }, update: held } }];
  }
  return [{ updateOne: { filter: { ...filter, ...UNHELD }, update } }, { updateOne: { filter: { ...filter, ...HELD }, update: held } }];
}

/**
 * What a completion's slow path needs to know of its job: its batch, and whether the run enqueued
 * children (its steps say so). Neither changes while the run holds its lease — a job's batch is set
 * at enqueue, and only the lease holder adds steps — so facts read under the lease stay true until
 * the completion's fenced write, which is refused anyway if the lease was lost since.
 */
export interface CompletionFacts {
  batchId: string | undefined;
  parent: boolean;
}

/** The projection that {@link factsOf} reads. */
export const FACTS_PROJECTION = { batchId: 1, 'steps.kind': 1 } as const;

/** The {@link CompletionFacts} of a job document read with {@link FACTS_PROJECTION}. */
export function factsOf(job: Pick<JobDocument, 'batchId' | 'steps'>): CompletionFacts {
  // Children are found by parent id, a command that reaches every shard of a partitioned
  // deployment: sent only by a run that enqueued some.
  return { batchId: job.batchId, parent: job.steps?.some((step) => step.kind === 'enqueue') === true };
}

/**
 * `running → completed`, fenced, keeping retention holds. A job with children first releases
 * them ({@link releaseChildren}), then completes. Refused as every fenced write is (`LEASE_LOST`,
 * or `CANCELLED` once its cancel was requested), changing nothing.
 *
 * `known`: the job's facts as a read under this lease found them (the group commit's own read, see
 * complete-many.ts). The fast path, which only a job in no batch and without children takes, and
 * the read of the first round are then skipped: a batch member's completion is its transaction.
 */
export async function completeKeepingHolds(
  jobs: Collection<JobDocument>,
  fenced: FencedWrites,
  lease: LeaseRef,
  update: UpdateFilter<JobDocument> & { $set: Partial<JobDocument> },
  session: ClientSession | undefined,
  batches: MongoBatches,
  known?: CompletionFacts,
): Promise<void> {
  const id = fenced.jobIdOf(lease);
  const fence = fencedFilter('complete', id, lease.token);
  if (!known && (await completeHeldOrNot(jobs, { ...fence, ...NO_CHILDREN, ...NOT_IN_BATCH }, update, session))) return;
  for (let round = 0; round < MAX_CONDITIONAL_ROUNDS; round++) {
    // Not completed: the lease is lost (or the job's cancel was requested), it has children to
    // release first, or it is a batch member (its batch's counts move in the same transaction).
    const facts = round === 0 && known ? known : await readFacts(jobs, fence, session);
    if (!facts) throw await fenced.refusal(lease, session);
    const { batchId, parent } = facts;
    if (batchId !== undefined) {
      return batches.within(session, async (s) => {
        if (parent) await releaseChildren(jobs, id, s);
        if (!(await completeHeldOrNot(jobs, fence, update, s))) throw await fenced.refusal(lease, s);
        await batches.moved(batchId, id, 'running', 'completed', update.$set.updatedAt as Date, s);
      });
    }
    if (parent) await releaseChildren(jobs, id, session);
    if (await completeHeldOrNot(jobs, fence, update, session)) return;
  }
  throw tooManyRounds('complete', lease.jobId);
}

/** The facts of the job `fence` finds (still running under the lease), or null when it finds none. */
async function readFacts(jobs: Collection<JobDocument>, fence: Filter<JobDocument>, session: ClientSession | undefined): Promise<CompletionFacts | null> {
  const job = await jobs.findOne(fence, { projection: { _id: 1, ...FACTS_PROJECTION }, ...withSession(session) });
  return job && factsOf(job);
}
