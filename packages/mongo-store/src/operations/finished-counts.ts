import type { FinishedCountQuery } from '@loom/core';
import { requireDate } from '../arguments.js';
import type { StoreCollections } from '../connection/collections.js';
import { DEAD_LETTER_INDEX, HELD_FINISHED_INDEX, RETENTION_INDEX } from '../schema/indexes.js';
import type { ResolvedOptions } from '../options.js';
import { StoreArgumentError } from '../store-errors.js';

/**
 * `countFinished`: a count over one index range, reading no document. Dead letters are counted on
 * their death-time index, which always exists. Completed jobs have an index on their finish time
 * only while retention of completed jobs is on (its TTL index): without it the count would read
 * every completed job, so the store answers null instead. Completed jobs under a retention hold
 * are counted on their own index (two index ranges in all).
 */
export async function countFinished(
  collections: StoreCollections,
  options: Pick<ResolvedOptions, 'retentionSeconds'>,
  req: FinishedCountQuery,
): Promise<number | null> {
  const from = requireDate(req?.from, 'countFinished from');
  const to = requireDate(req?.to, 'countFinished to');
  if (req.status === 'dead') return collections.deadLetters.countDocuments({ diedAt: { $gte: from, $lt: to } }, { hint: DEAD_LETTER_INDEX.died });
  if (req.status !== 'completed') throw new StoreArgumentError(`countFinished status must be 'completed' or 'dead', got ${JSON.stringify(req.status)}`);
  if (options.retentionSeconds.completed === false) return null;
  // A completed job retention must not remove yet (a child whose parent may still wait for it)
  // keeps its finish time in `heldFinishedAt`, out of the TTL index: counted on its own index.
  const [free, held] = await Promise.all([
    collections.jobs.countDocuments({ status: 'completed', finishedAt: { $gte: from, $lt: to } }, { hint: RETENTION_INDEX.jobs }),
    collections.jobs.countDocuments({ heldFinishedAt: { $gte: from, $lt: to } }, { hint: HELD_FINISHED_INDEX }),
  ]);
  return free + held;
}
