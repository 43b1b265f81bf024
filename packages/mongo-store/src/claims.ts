import { randomUUID } from 'node:crypto';
import type { Collection } from 'mongodb';
import { LoomError, type ClaimRequest, type JobRecord } from '@loom/core';
import { requireDate, requireNumber, requireString } from './arguments.js';
import type { JobDocument } from './documents.js';
import { claimCandidateFilter, CLAIM_SORT, claimFilter } from './filters.js';
import { CLAIM_INDEX_KEY } from './indexes.js';
import { toJobRecord } from './records.js';
import { claimUpdate } from './updates.js';

/** A safety bound only: a batch claim round fails only when a concurrent claimer progressed. */
const MAX_BATCH_ROUNDS = 100;

/**
 * Leases up to `req.limit` claimable jobs. One job: a single atomic `findOneAndUpdate` on the
 * claim index. More: see {@link claimBatch}.
 */
export async function claimJobs(jobs: Collection<JobDocument>, req: ClaimRequest): Promise<JobRecord[]> {
  const limit = requireNumber(req?.limit, 'claim limit', true);
  if (limit < 1) throw new LoomError('INVALID_ARGUMENT', `claim limit must be >= 1, got ${limit}`);
  const lease = { owner: requireString(req.owner, 'claim owner'), until: requireDate(req.leaseUntil, 'claim leaseUntil') };
  const now = requireDate(req.now, 'claim now');
  const filter = claimFilter(req);
  if (req.queues.length === 0 || req.names.length === 0) return [];
  if (limit === 1) {
    const doc = await jobs.findOneAndUpdate(filter, claimUpdate({ ...lease, token: randomUUID() }, now), {
      sort: CLAIM_SORT,
      hint: CLAIM_INDEX_KEY,
      returnDocument: 'after',
    });
    return doc ? [toJobRecord(doc)] : [];
  }
  return claimBatch(jobs, req, lease, now, limit);
}

/**
 * Three commands per round for up to `limit` jobs: read candidate ids in claim order; take them
 * with one unordered bulk `update` whose statements each re-check the claim filter for one
 * document (so concurrent claimers never share a job) and give it its own fresh token; read back
 * the ones this round won. Candidates lost to a concurrent claimer are replaced in the next round
 * until `limit` is reached or nothing claimable is left; a lost round means another claimer made
 * progress, so the loop ends. A lone candidate is taken and read back by one `findAndModify`, and
 * a read that found fewer candidates than wanted ends the loop (it saw every job claimable then),
 * so a claim that finds one due job costs two commands, not four.
 */
async function claimBatch(
  jobs: Collection<JobDocument>,
  req: ClaimRequest,
  lease: { owner: string; until: Date },
  now: Date,
  limit: number,
): Promise<JobRecord[]> {
  const claimed: JobDocument[] = [];
  for (let round = 0; claimed.length < limit && round < MAX_BATCH_ROUNDS; round++) {
    const wanted = limit - claimed.length;
    const candidates = await jobs.find(claimFilter(req), { sort: CLAIM_SORT, hint: CLAIM_INDEX_KEY, limit: wanted, projection: { _id: 1 } }).toArray();
    if (candidates.length === 0) break;
    if (candidates.length === 1) {
      const update = claimUpdate({ ...lease, token: randomUUID() }, now);
      const doc = await jobs.findOneAndUpdate(claimCandidateFilter(req, candidates[0]._id), update, { returnDocument: 'after' });
      if (doc) claimed.push(doc);
    } else {
      const leases = candidates.map(({ _id }) => ({ _id, lease: { ...lease, token: randomUUID() } }));
      const taken = await jobs.bulkWrite(
        leases.map(({ _id, lease: own }) => ({ updateOne: { filter: claimCandidateFilter(req, _id), update: claimUpdate(own, now) } })),
        { ordered: false },
      );
      if (taken.modifiedCount > 0) {
        const won = { _id: { $in: leases.map((l) => l._id) }, 'lease.token': { $in: leases.map((l) => l.lease.token) } };
        claimed.push(...(await jobs.find(won).toArray()));
      }
    }
    if (candidates.length < wanted) break;
  }
  return sortForClaim(claimed).map(toJobRecord);
}

/** Claim order (priority desc, runAt, enqueue order) for jobs read back in arbitrary order. */
function sortForClaim(docs: JobDocument[]): JobDocument[] {
  return docs.sort(
    (a, b) => b.priority - a.priority || a.runAt.getTime() - b.runAt.getTime() || a._id.toHexString().localeCompare(b._id.toHexString()),
  );
}
