import type { Collection } from 'mongodb';
import { requireDate } from '../arguments.js';
import type { JobDocument } from '../schema/documents.js';
import { CLAIM_INDEX_KEY } from '../schema/indexes.js';

/**
 * `nextClaimableAt`: the least `claimAt` after `now`. A job has `claimAt` exactly while it can
 * become claimable (its `runAt`, its wait's timeout, its lease's expiry + 1 ms), and only such jobs
 * are in the claim index (partial on `claimAt`, which is its last key): the read walks that index's
 * keys, live jobs only, and reads no document, however many finished jobs the collection keeps.
 */
export async function nextClaimableAt(jobs: Collection<JobDocument>, now: Date): Promise<Date | null> {
  const after = requireDate(now, 'nextClaimableAt now');
  const [next] = await jobs
    .find({ claimAt: { $gt: after } }, { sort: { claimAt: 1 }, limit: 1, projection: { _id: 0, claimAt: 1 }, hint: CLAIM_INDEX_KEY })
    .toArray();
  return next?.claimAt ?? null;
}
