import type { AnyBulkWriteOperation, ClientSession, Collection, Filter, ObjectId, UpdateFilter } from 'mongodb';
import type { LeaseRef } from '@loom/core';
import { withSession } from './collections.js';
import type { JobDocument } from './documents.js';
import { fencedFilter } from './filters.js';
import { MAX_CONDITIONAL_ROUNDS, tooManyRounds, type FencedWrites } from './fenced-writes.js';

/**
 * Retention holds: completed jobs the TTL monitor must not remove yet.
 *
 * The retention index keys on `finishedAt` (partial: `status: 'completed'`), and MongoDB's TTL
 * monitor removes what it indexes, with no hook to ask first. So a completed job that must stay is
 * stored without `finishedAt`: its finish time sits in `heldFinishedAt` (records show it as
 * `finishedAt`) until every hold on it is released, which moves it back. A job is held
 * - `holdForParent`: it is a child (`parentId`) and its parent has not finished: the parent may
 *   sleep past the retention period and only then `ctx.waitForJob` it. Released when the parent
 *   completes or dies (before its own outcome is written: a parent whose handler returned no longer
 *   needs its children, even if that write then fails and the run is replayed from its steps);
 * - `holdForKey`: `dedupe: 'forever'` and its idempotency key's tombstone is not final yet: the
 *   job is the only proof the key was used. Released once the tombstone is final.
 *
 * Completions check holds in the write itself ({@link completeHeldOrNot}), and releases run
 * against every state ({@link releaseHolds}), so a job completing concurrently with a release is
 * neither left held nor released early.
 */
export type HoldField = 'holdForParent' | 'holdForKey';

const HOLDS: HoldField[] = ['holdForParent', 'holdForKey'];

/** No hold at all. */
const UNHELD: Filter<JobDocument> = { holdForParent: { $exists: false }, holdForKey: { $exists: false } };
/** At least one hold. */
const HELD: Filter<JobDocument> = { $or: [{ holdForParent: { $exists: true } }, { holdForKey: { $exists: true } }] };

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
  const filter = childless ? { ...fence, ...NO_CHILDREN } : fence;
  if (many) {
    return [
      { updateMany: { filter: { ...filter, ...UNHELD }, update } },
      { updateMany: { filter: { ...filter, ...HELD }, update: held } },
    ];
  }
  return [
    { updateOne: { filter: { ...filter, ...UNHELD }, update } },
    { updateOne: { filter: { ...filter, ...HELD }, update: held } },
  ];
}

/**
 * `running → completed`, fenced, keeping retention holds. A job with children first releases
 * them ({@link releaseChildren}), then completes. Refused as every fenced write is (`LEASE_LOST`,
 * or `CANCELLED` once its cancel was requested), changing nothing.
 */
export async function completeKeepingHolds(
  jobs: Collection<JobDocument>,
  fenced: FencedWrites,
  lease: LeaseRef,
  update: UpdateFilter<JobDocument> & { $set: Partial<JobDocument> },
  session?: ClientSession,
): Promise<void> {
  const id = fenced.jobIdOf(lease);
  const fence = fencedFilter(id, lease.token);
  if (await completeHeldOrNot(jobs, { ...fence, ...NO_CHILDREN }, update, session)) return;
  for (let round = 0; round < MAX_CONDITIONAL_ROUNDS; round++) {
    // Not completed: the lease is lost (or the job's cancel was requested), or it has children to release first.
    const job = await jobs.findOne(fence, { projection: { _id: 1 }, ...withSession(session) });
    if (!job) throw await fenced.refusal(lease, session);
    await releaseChildren(jobs, id, session);
    if (await completeHeldOrNot(jobs, fence, update, session)) return;
  }
  throw tooManyRounds('complete', lease.jobId);
}

/** Releases the `holdForParent` of every child of `parentId` (the parent completes or dies). */
export function releaseChildren(jobs: Collection<JobDocument>, parentId: ObjectId, session?: ClientSession): Promise<void> {
  return releaseHolds(jobs, { parentId: { $eq: parentId.toHexString() } }, 'holdForParent', session);
}

/**
 * Removes the hold `field` from the jobs matching `where`. A completed job left with no hold gets
 * its `finishedAt` back, and from then on retention counts from it. One `update` command.
 */
export async function releaseHolds(jobs: Collection<JobDocument>, where: Filter<JobDocument>, field: HoldField, session?: ClientSession): Promise<void> {
  const other = HOLDS.find((h) => h !== field)!;
  const holding = { ...where, [field]: { $exists: true } } as Filter<JobDocument>;
  const operations: AnyBulkWriteOperation<JobDocument>[] = [
    // Not completed yet, or still held otherwise: only the hold goes.
    { updateMany: { filter: { ...holding, $or: [{ status: { $ne: 'completed' } }, { [other]: { $exists: true } }] }, update: { $unset: { [field]: '' } } } },
    // Completed and free now: its finish time returns to `finishedAt`, where retention sees it.
    {
      updateMany: {
        filter: { ...holding, status: 'completed', [other]: { $exists: false } },
        update: [{ $set: { finishedAt: '$heldFinishedAt' } }, { $unset: ['heldFinishedAt', field] }],
      },
    },
  ];
  await jobs.bulkWrite(operations, { ordered: true, ...withSession(session) });
}
