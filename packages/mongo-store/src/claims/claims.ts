import { randomUUID } from 'node:crypto';
import type { Collection, Filter, ObjectId } from 'mongodb';
import { assertFlowLimits, type ClaimRequest, type JobRecord } from '@loom/core';
import { requireDate, requireNumber, requireString, requireStrings } from '../arguments.js';
import type { JobDocument } from '../schema/documents.js';
import type { JobsHeldByTransactions } from './held-jobs.js';
import { claimableNames, claimCandidateFilter, CLAIM_SORT, claimFilter, claimRoundFilter } from '../schema/filters.js';
import { CLAIM_INDEX_KEY } from '../schema/indexes.js';
import type { StoreLogger } from '../options.js';
import { isMaxTimeExpired, StoreArgumentError, StoreOperationError } from '../store-errors.js';
import { toJobRecord } from '../schema/records.js';
import { claimRoundPipeline, claimUpdate, leaseExpiredAt, releaseClaimPipeline } from '../schema/updates.js';
import { isTransientMongoError } from '../connection/transient-errors.js';
import { ClaimRound } from './claim-round.js';

/** Claims of requests with flow limits (see `flow-claims.ts`). */
export interface FlowClaims {
  claim(req: ClaimRequest & SetAside, lease: { owner: string; until: Date }, now: Date, limit: number): Promise<JobRecord[]>;
}

/** A safety bound only: a batch claim round fails only when a concurrent claimer progressed. */
const MAX_BATCH_ROUNDS = 100;

/**
 * How many (queue, name) ranges one claim query may ask for. mongod merges at most 200 index scans
 * in sort order (`internalQueryMaxScansToExplode`); past that it would sort every due job of the
 * claim in memory. A claim over more pairs reads candidates group by group and merges them here.
 */
const MAX_MERGED_SCANS = 200;

/** Jobs a claim leaves out: those an open transaction holds (see `JobsHeldByTransactions`). */
export interface SetAside {
  setAside?: readonly ObjectId[];
}

/** The queues and names of one candidate query (at most {@link MAX_MERGED_SCANS} pairs). */
export type ClaimGroup = Pick<ClaimRequest, 'queues' | 'names' | 'now'> & SetAside;

/** Splits a claim's queues and claimable names into groups of at most {@link MAX_MERGED_SCANS} pairs. */
export function claimGroups(req: Pick<ClaimRequest, 'queues' | 'names' | 'excludeNames' | 'now'> & SetAside): ClaimGroup[] {
  const queues = [...new Set(requireStrings(req.queues, 'claim queues'))];
  const names = claimableNames(req);
  const groups: ClaimGroup[] = [];
  for (let q = 0; q < queues.length; q += MAX_MERGED_SCANS) {
    const someQueues = queues.slice(q, q + MAX_MERGED_SCANS);
    const namesPerGroup = Math.floor(MAX_MERGED_SCANS / someQueues.length);
    for (let n = 0; n < names.length; n += namesPerGroup)
      groups.push({ queues: someQueues, names: names.slice(n, n + namesPerGroup), now: req.now, setAside: req.setAside });
  }
  return groups;
}

/**
 * Leases up to `req.limit` claimable jobs. One job: a single atomic `findOneAndUpdate` on the
 * claim index. More (or more (queue, name) pairs than one query merges): see {@link claimBatch}.
 *
 * Every write of a claim carries `maxTimeMS`: a job written by a transaction that stays open (its
 * worker froze or died inside `ctx.transaction`) holds every write that reaches it until the
 * server aborts the transaction, 60 s by default. A claim that ran out of time gave back what it
 * may have leased and is logged; `held` then finds the job the transaction holds and sets it aside,
 * and the claim is made again without it, so one held job does not stall the other jobs of any
 * queue. Without `held`, or when nothing held was found, the claim answers no jobs and the engine
 * claims again at its next poll.
 */
export async function claimJobs(
  jobs: Collection<JobDocument>,
  req: ClaimRequest,
  logger: StoreLogger,
  flow?: FlowClaims,
  maxTimeMS?: number,
  held?: JobsHeldByTransactions,
): Promise<JobRecord[]> {
  await held?.recheck();
  try {
    return await claimWithin(jobs, { ...req, setAside: held?.ids }, logger, flow, maxTimeMS);
  } catch (err) {
    if (!isMaxTimeExpired(err)) throw err;
    const setAside = held ? await held.setAsideHeld(claimGroups({ ...req, setAside: held.ids }), requireNumber(req.limit, 'claim limit', true)) : [];
    logger.warn(
      { err, maxTimeMS, setAside: setAside.map((id) => id.toHexString()) },
      `a claim ran past its maxTimeMS${maxTimeMS === undefined ? '' : ` (${maxTimeMS} ms, MongoStore option claimTimeout)`} and claimed nothing this time: a job it reached is most likely held by a transaction left open by a worker that died inside ctx.transaction, until the server aborts it` +
        (setAside.length === 0
          ? ''
          : `; job ${setAside.map((id) => id.toHexString()).join(', ')} is held so: claims leave it out, and probe it at each claim until the transaction is gone, and claim again now`),
    );
    if (setAside.length === 0) return [];
    try {
      return await claimWithin(jobs, { ...req, setAside: held!.ids }, logger, flow, maxTimeMS);
    } catch (again) {
      if (!isMaxTimeExpired(again)) throw again;
      logger.warn({ err: again, maxTimeMS }, 'a claim made without the jobs a transaction holds ran past its maxTimeMS too and claimed nothing this time');
      return [];
    }
  }
}

async function claimWithin(
  jobs: Collection<JobDocument>,
  req: ClaimRequest & SetAside,
  logger: StoreLogger,
  flow: FlowClaims | undefined,
  maxTimeMS: number | undefined,
): Promise<JobRecord[]> {
  const limit = requireNumber(req?.limit, 'claim limit', true);
  if (limit < 1) throw new StoreArgumentError(`claim limit must be >= 1, got ${limit}`);
  const lease = { owner: requireString(req.owner, 'claim owner'), until: requireDate(req.leaseUntil, 'claim leaseUntil') };
  const now = requireDate(req.now, 'claim now');
  assertFlowLimits(req.flow, 'MongoStore');
  if (flow && req.flow !== undefined && req.flow.length > 0) return flow.claim(req, lease, now, limit);
  const groups = claimGroups(req);
  if (groups.length === 0) return [];
  if (limit === 1 && groups.length === 1) {
    const doc = await claimBest(jobs, groups[0], { ...lease, token: randomUUID() }, now, maxTimeMS);
    return doc ? [toJobRecord(doc)] : [];
  }
  return claimBatch(jobs, req, groups, lease, now, limit, logger, maxTimeMS);
}

/**
 * Leases the best claimable job of `group` under `lease` with one `findAndModify` on the claim
 * index. If the command fails, a lease it may have written anyway is given back (as in
 * {@link takeCandidates}) before the error surfaces.
 */
export async function claimBest(
  jobs: Collection<JobDocument>,
  group: ClaimGroup,
  lease: { owner: string; token: string; until: Date },
  now: Date,
  maxTimeMS?: number,
): Promise<JobDocument | null> {
  try {
    return await jobs.findOneAndUpdate(claimFilter(group), claimUpdate(lease, now), {
      sort: CLAIM_SORT,
      hint: CLAIM_INDEX_KEY,
      returnDocument: 'after',
      ...bounded(maxTimeMS),
    });
  } catch (err) {
    // Found by its queue, name and lease (running jobs of the claim's queues are indexed), never by a scan.
    const ours = { queue: { $in: group.queues }, name: { $in: group.names }, claimAt: leaseExpiredAt(lease.until), 'lease.token': lease.token };
    throw await giveBack(jobs, ours, `the job it may have leased (lease token ${lease.token})`, now, err);
  }
}

/** Up to `wanted` candidates in claim order: one query per group, merged. With `withName`, each says its job's name. */
export async function readCandidates(
  jobs: Collection<JobDocument>,
  groups: ClaimGroup[],
  wanted: number,
  withName = false,
): Promise<Pick<JobDocument, '_id' | 'name'>[]> {
  const options = { sort: CLAIM_SORT, hint: CLAIM_INDEX_KEY, limit: wanted };
  if (groups.length === 1) return jobs.find(claimFilter(groups[0]), { ...options, projection: withName ? { _id: 1, name: 1 } : { _id: 1 } }).toArray();
  const projection = withName ? { _id: 1, name: 1, priority: 1, runAt: 1 } : { _id: 1, priority: 1, runAt: 1 };
  const found = await Promise.all(groups.map((group) => jobs.find<JobDocument>(claimFilter(group), { ...options, projection }).toArray()));
  return sortForClaim(found.flat()).slice(0, wanted);
}

/**
 * Three commands per round for up to `limit` jobs: read candidate ids in claim order; take them
 * with one `updateMany` that re-checks the claim filter for each document (so concurrent claimers
 * never share a job) and gives each its own fresh token (see {@link ClaimRound}); read back
 * the ones this round won. Candidates lost to a concurrent claimer are replaced in the next round
 * until `limit` is reached or nothing claimable is left; a lost round means another claimer made
 * progress, so the loop ends. A lone candidate is taken and read back by one `findAndModify`, and
 * a read that found fewer candidates than wanted ends the loop (it saw every job claimable then),
 * so a claim that finds one due job costs two commands, not four. A claim over more (queue, name)
 * pairs than one query merges reads its candidates with one query per group.
 *
 * A round that fails after sending its update gives its leases back (see {@link takeCandidates});
 * the jobs of earlier rounds are then returned (the failure logged), and a failed first round
 * rejects the claim.
 */
async function claimBatch(
  jobs: Collection<JobDocument>,
  req: ClaimRequest & SetAside,
  groups: ClaimGroup[],
  lease: { owner: string; until: Date },
  now: Date,
  limit: number,
  logger: StoreLogger,
  maxTimeMS: number | undefined,
): Promise<JobRecord[]> {
  const claimed: JobDocument[] = [];
  for (let round = 0; claimed.length < limit && round < MAX_BATCH_ROUNDS; round++) {
    const wanted = limit - claimed.length;
    let found: number;
    try {
      const candidates = await readCandidates(jobs, groups, wanted);
      found = candidates.length;
      if (found > 0)
        claimed.push(
          ...(await takeCandidates(
            jobs,
            req,
            new ClaimRound(),
            candidates.map(({ _id }) => _id),
            lease,
            now,
            maxTimeMS,
          )),
        );
    } catch (err) {
      if (claimed.length === 0) throw err;
      // Jobs of earlier rounds are leased and read back: hand them out rather than strand them.
      logger.warn(
        { err, jobIds: claimed.map((d) => d._id.toHexString()) },
        'a batch claim round failed (its leases were given back); returning the jobs claimed before it',
      );
      break;
    }
    if (found < wanted) break;
  }
  return sortForClaim(claimed).map(toJobRecord);
}

/**
 * Leases the candidates `ids` (each re-checked against the claim filter, each with its own token
 * of `round`) and returns the ones won: a lone one with one `findAndModify`, more with one
 * `updateMany` (an update pipeline giving each job its own token) and a read-back. Once the update
 * is sent, jobs may be leased under our tokens whatever happens next; if the update or the
 * read-back fails, those leases are given back before the error surfaces. Otherwise the jobs would
 * stay leased to a claim that returned nothing, run only after the lease expired, and with that
 * attempt spent (a job with `retries: 0` would die without ever running).
 */
export async function takeCandidates(
  jobs: Collection<JobDocument>,
  req: Parameters<typeof claimCandidateFilter>[0],
  round: ClaimRound,
  ids: ObjectId[],
  lease: { owner: string; until: Date },
  now: Date,
  maxTimeMS?: number,
): Promise<JobDocument[]> {
  const ours = { _id: { $in: ids }, 'lease.token': { $in: ids.map((id) => round.tokenFor(id)) } };
  try {
    if (ids.length === 1) {
      const doc = await jobs.findOneAndUpdate(claimCandidateFilter(req, ids[0]!), claimUpdate({ ...lease, token: round.tokenFor(ids[0]!) }, now), {
        returnDocument: 'after',
        ...bounded(maxTimeMS),
      });
      return doc ? [doc] : [];
    }
    const take = () => jobs.updateMany(claimRoundFilter(req, ids), claimRoundPipeline(lease, round.tokenExpression(), now), bounded(maxTimeMS));
    let resent = false;
    const taken = await take().catch((err: unknown) => {
      // An updateMany is not a retryable write: sent once more on a transient error, as the driver
      // would resend a bulk of updateOnes. Safe: a job the first send leased is no longer claimable
      // at `now`, so it is not matched twice; the read-back then finds it under our token, so it
      // follows however little the second send modified. A claim past its maxTimeMS is left to
      // `claimJobs`.
      if (!isTransientMongoError(err) || isMaxTimeExpired(err)) throw err;
      resent = true;
      return take();
    });
    return taken.modifiedCount > 0 || resent ? await jobs.find(ours).toArray() : [];
  } catch (err) {
    throw await giveBack(jobs, ours, `some of jobs ${ids.map((id) => id.toHexString()).join(', ')}`, now, err);
  }
}

/**
 * Undoes the leases a failed claim may hold (`ours`: its ids and tokens): back to `queued`,
 * claimable at their own `runAt` (due, so at once, in their old place), the attempt given back.
 * Returns the error the claim rejects with: the original one, or, when giving back failed too, one
 * that says the jobs wait for their lease to expire.
 */
export async function giveBack(jobs: Collection<JobDocument>, ours: Filter<JobDocument>, leased: string, now: Date, err: unknown): Promise<unknown> {
  try {
    await jobs.updateMany({ ...ours, status: 'running' }, releaseClaimPipeline(now));
    return err;
  } catch (releaseErr) {
    return new StoreOperationError(
      `claim failed (${(err as Error)?.message ?? String(err)}) after leasing ${leased}, and giving it back failed too ` +
        `(${(releaseErr as Error)?.message ?? String(releaseErr)}): leased jobs run once their lease expires, one attempt spent`,
      { cause: err },
    );
  }
}

/** The `maxTimeMS` option of a claim's write, when the claim has one (see {@link claimJobs}). */
function bounded(maxTimeMS: number | undefined): { maxTimeMS?: number } {
  return maxTimeMS === undefined ? {} : { maxTimeMS };
}

/** Claim order (priority desc, runAt, enqueue order) for jobs read back in arbitrary order. */
export function sortForClaim<T extends Pick<JobDocument, '_id' | 'priority' | 'runAt'>>(docs: T[]): T[] {
  // Ids by their 12 bytes, as MongoDB orders ObjectIds (jobs of one enqueueMany share priority and
  // runAt, so this decides most comparisons: two hex strings and a localeCompare each cost more).
  return docs.sort((a, b) => b.priority - a.priority || a.runAt.getTime() - b.runAt.getTime() || Buffer.compare(a._id.id, b._id.id));
}
