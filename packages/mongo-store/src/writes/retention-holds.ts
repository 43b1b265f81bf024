import type { AnyBulkWriteOperation, ClientSession, Collection, Filter, ObjectId } from 'mongodb';
import { withSession } from '../connection/collections.js';
import { parseJobId } from '../arguments.js';
import type { JobDocument } from '../schema/documents.js';
import { fencedFilter } from '../schema/filters.js';

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
 *   job is the only proof the key was used. Released once the tombstone is final;
 * - `dependentsOpen`: jobs wait for it (`dependsOn`) and its end has not been applied to them yet
 *   (dependencies.ts): removed, its status could not be read. Released by the settle.
 *
 * Completions check holds in the write itself (`completionStatements` in completions.ts), and releases run
 * against every state ({@link releaseHolds}), so a job completing concurrently with a release is
 * neither left held nor released early.
 */
export type HoldField = 'holdForParent' | 'holdForKey' | 'dependentsOpen';

const HOLDS: HoldField[] = ['holdForParent', 'holdForKey', 'dependentsOpen'];

/** No hold at all. */
export const UNHELD: Filter<JobDocument> = { holdForParent: { $exists: false }, holdForKey: { $exists: false }, dependentsOpen: { $exists: false } };
/** At least one hold. */
export const HELD: Filter<JobDocument> = { $or: HOLDS.map((hold) => ({ [hold]: { $exists: true } })) };

/** Releases the `holdForParent` of every child of `parentId` (the parent completes or dies). */
export async function releaseChildren(jobs: Collection<JobDocument>, parentId: ObjectId, session?: ClientSession): Promise<void> {
  await releaseHolds(jobs, { parentId: { $eq: parentId.toHexString() } }, 'holdForParent', session);
}

/**
 * Removes the hold `field` from the jobs matching `where`. A completed job left with no hold gets
 * its `finishedAt` back, and from then on retention counts from it. One `update` command.
 */
export async function releaseHolds(jobs: Collection<JobDocument>, where: Filter<JobDocument>, field: HoldField, session?: ClientSession): Promise<number> {
  return (await jobs.bulkWrite(releaseStatements(where, field), { ordered: true, ...withSession(session) })).matchedCount;
}

/**
 * The two statements of {@link releaseHolds}, whose filters exclude each other: a job matching
 * `where` and holding `field` is matched by exactly one, so the matched count of several releases
 * sent together is the number of jobs released.
 */
export function releaseStatements(where: Filter<JobDocument>, field: HoldField): AnyBulkWriteOperation<JobDocument>[] {
  const others = HOLDS.filter((h) => h !== field);
  const holding = { ...where, [field]: { $exists: true } } as Filter<JobDocument>;
  const free = Object.fromEntries(others.map((other) => [other, { $exists: false }]));
  return [
    // Not completed yet, or still held otherwise: only the hold goes.
    {
      updateMany: {
        filter: { ...holding, $or: [{ status: { $ne: 'completed' } }, ...others.map((other) => ({ [other]: { $exists: true } }))] },
        update: { $unset: { [field]: '' } },
      },
    },
    // Completed and free now: its finish time returns to `finishedAt`, where retention sees it.
    {
      updateMany: {
        filter: { ...holding, status: 'completed', ...free },
        update: [{ $set: { finishedAt: '$heldFinishedAt' } }, { $unset: ['heldFinishedAt', field] }],
      },
    },
  ];
}

/**
 * A run that ends its job by a cancel first releases the retention holds of the children it
 * enqueued (a death releases them in its move, a completion in its write); a lost lease releases
 * nothing: only a job still running under `token` (its cancel requested) that enqueued children.
 */
export async function releaseChildrenOfRun(jobs: Collection<JobDocument>, id: ObjectId, token: string): Promise<void> {
  const held = { ...fencedFilter('completeCancel', id, token), 'steps.kind': 'enqueue' };
  if (await jobs.findOne(held, { projection: { _id: 1 } })) await releaseChildren(jobs, id);
}

/**
 * A replayed child keeps its retention hold only while its parent is unfinished: the parent's
 * release (when it completed or died) ran while the child was a dead letter. Checked after the
 * insert, so a parent finishing meanwhile releases it itself.
 */
export async function releaseIfParentFinished(jobs: Collection<JobDocument>, id: ObjectId): Promise<void> {
  const job = await jobs.findOne({ _id: id, holdForParent: { $exists: true } }, { projection: { parentId: 1 } });
  const parentId = job?.parentId === undefined ? null : parseJobId(job.parentId);
  if (!job || (parentId && (await jobs.findOne({ _id: parentId, status: { $in: ['queued', 'running', 'waiting'] } }, { projection: { _id: 1 } })))) return;
  await releaseHolds(jobs, { _id: id }, 'holdForParent');
}
