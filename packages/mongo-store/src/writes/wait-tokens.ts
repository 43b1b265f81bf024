import type { Collection, Filter } from 'mongodb';
import {
  endedJobReason,
  InvalidArgumentError,
  LoomError,
  waitTokenSignal,
  waitTokenSignalData,
  type JobStatus,
  type LeaseRef,
  type WaitTokenRecord,
  type WaitTokenSettlement,
  type WaitTokenSettleOutcome,
} from '@loom/core';
import { requireDate, requireString } from '../arguments.js';
import type { JobDocument, WaitTokenDocument } from '../schema/documents.js';
import { touchUpdate } from '../schema/updates.js';
import type { IndexSpec } from '../schema/indexes.js';
import { StoreArgumentError } from '../store-errors.js';
import type { FencedWrites } from './fenced-writes.js';
import { storeSignal } from './signals.js';
import type { Route } from '../partitions/partitions.js';

const DUPLICATE_KEY = 11000;

/** The index of a job's tokens (`listWaitTokens`, `endWaitTokens`, `removeJob`). */
export const TOKENS_BY_JOB_INDEX = 'loom_tokens_job';

/** The TTL index removing settled tokens (see `JobStore.createWaitToken`, "Retention"). */
export const TOKENS_RETENTION_INDEX = 'loom_retention_tokens';

/**
 * Indexes of the wait-token collection. Retention: a settled token goes the retention of completed
 * jobs after its settlement (`settledAt`); a pending one has no `settledAt`, so the TTL monitor
 * never removes it, and ending its job (`endWaitTokens`) settles it. Jobs are removed by their own
 * TTL index one by one, so their tokens cannot go "with" them: this rule keeps a token at least as
 * long as a completed job that settled it at the same instant, and never lets one stay for good.
 */
export function tokenIndexPlan(retentionSeconds: number | false): IndexSpec[] {
  const plan: IndexSpec[] = [{ name: TOKENS_BY_JOB_INDEX, key: { jobId: 1, createdAt: 1, _id: 1 } }];
  if (retentionSeconds !== false) plan.push({ name: TOKENS_RETENTION_INDEX, key: { settledAt: 1 }, expireAfterSeconds: retentionSeconds });
  return plan;
}

function toRecord(doc: WaitTokenDocument): WaitTokenRecord {
  const { _id, jobRoute: _route, ...rest } = doc;
  return { id: _id, ...rest };
}

/**
 * Where the store keeps the routes (queue, partition) of jobs on a partitioned deployment
 * (routed-jobs.ts `JobRoutes`). A token stores its job's route (`jobRoute`), so the process that
 * settles it (an HTTP endpoint's, which never saw the job) signals the job on its one shard.
 */
export interface TokenJobRoutes {
  get(id: string): Route | undefined;
  learn(id: string, route: Route): void;
}

/**
 * Wait tokens in their own collection. Settling is two writes: the conditional settlement of the
 * token (the first one wins), then its delivery to the job as a signal carrying the token's id,
 * which stores nothing when it was delivered before. A process dying between them leaves a
 * settled, undelivered token: the next settle call, or the waiting run when it next looks, delivers it.
 */
export class WaitTokens {
  constructor(
    private readonly tokens: Collection<WaitTokenDocument>,
    private readonly jobs: Collection<JobDocument>,
    private readonly fenced: FencedWrites,
    /** The job's status once it has ended (`null`: it is gone); undefined while it has not ended. */
    private readonly endedStatus: (jobId: string) => Promise<JobStatus | null | undefined>,
    private readonly routes?: TokenJobRoutes,
  ) {}

  /** Learns the route of a token's job from the token, before anything is read or written by the job's id. */
  private learnRoute(doc: Pick<WaitTokenDocument, 'jobId' | 'jobRoute'> | null): void {
    if (doc?.jobRoute && this.routes) this.routes.learn(doc.jobId, doc.jobRoute);
  }

  /** The tokens of a job, oldest first (index `loom_tokens_job`). */
  async list(jobId: string): Promise<WaitTokenRecord[]> {
    requireString(jobId, 'jobId');
    const docs = await this.tokens.find({ jobId }).sort({ jobId: 1, createdAt: 1, _id: 1 }).hint(TOKENS_BY_JOB_INDEX).toArray();
    return docs.map(toRecord);
  }

  /** Ends the pending tokens of an ended (or removed) job: `cancelled`, so they resume nothing and retention removes them. */
  async end(jobId: string, now: Date): Promise<number> {
    requireString(jobId, 'jobId');
    requireDate(now, 'now');
    const ended = await this.endedStatus(jobId);
    if (ended === undefined) return 0;
    const result = await this.tokens.updateMany(
      { jobId, status: 'pending' },
      { $set: { status: 'cancelled', settledAt: now, reason: endedJobReason(jobId, ended) } },
      { hint: TOKENS_BY_JOB_INDEX },
    );
    return result.modifiedCount;
  }

  /** Deletes the tokens of a removed job. */
  async remove(jobId: string): Promise<void> {
    await this.tokens.deleteMany({ jobId }, { hint: TOKENS_BY_JOB_INDEX });
  }

  async create(lease: LeaseRef, token: WaitTokenRecord, now: Date): Promise<void> {
    requireDate(now, 'now');
    if (typeof token !== 'object' || token === null) throw new StoreArgumentError('wait token must be an object');
    const id = requireString(token.id, 'wait token id');
    if (token.jobId !== lease?.jobId) throw new InvalidArgumentError('wait token jobId', `must be the lease's job ${String(lease?.jobId)}`);
    if (token.status !== 'pending') throw new InvalidArgumentError('wait token status', "must be 'pending'");
    // The fence first: a run that lost its lease stores no token.
    await this.fenced.write('createWaitToken', lease, touchUpdate(now));
    const { id: _ignored, ...fields } = token;
    const jobRoute = this.routes?.get(lease.jobId);
    try {
      await this.tokens.insertOne({ _id: id, ...fields, ...(jobRoute ? { jobRoute } : {}) });
    } catch (err) {
      if ((err as { code?: unknown }).code === DUPLICATE_KEY) throw new InvalidArgumentError('wait token id', `"${id}" is taken; nothing was stored`);
      throw err;
    }
  }

  async get(id: string): Promise<WaitTokenRecord | null> {
    const doc = await this.tokens.findOne({ _id: requireString(id, 'wait token id') });
    return doc ? toRecord(doc) : null;
  }

  async settle(id: string, req: { settlement: WaitTokenSettlement; now: Date }): Promise<WaitTokenSettleOutcome | null> {
    requireString(id, 'wait token id');
    const now = requireDate(req?.now, 'now');
    const { settlement } = req;
    const status = settlement?.status;
    if (status !== 'completed' && status !== 'rejected' && status !== 'timed-out')
      throw new StoreArgumentError('settlement status must be completed, rejected or timed-out');
    if (status !== 'timed-out') {
      const ended = await this.endIfJobEnded(id, now);
      if (ended) return ended;
    }
    const filter: Filter<WaitTokenDocument> = { _id: id, status: 'pending' };
    if (status === 'timed-out') filter.timeoutAt = { $lte: now };
    else filter.$or = [{ timeoutAt: { $exists: false } }, { timeoutAt: { $gt: now } }];
    const set: Partial<WaitTokenDocument> = { status, settledAt: now };
    if (settlement.status === 'completed' && settlement.output !== undefined) set.output = settlement.output;
    if (settlement.status === 'rejected' && settlement.reason !== undefined) set.reason = requireString(settlement.reason, 'reason');
    const after = await this.tokens.findOneAndUpdate(filter, { $set: set }, { returnDocument: 'after' });
    const doc = after ?? (await this.tokens.findOne({ _id: id }));
    if (!doc) return null;
    this.learnRoute(doc);
    const token = toRecord(doc);
    if (token.status !== 'pending' && token.status !== 'cancelled') await this.deliver(token, now);
    return { settled: after !== null, token };
  }

  /** A pending token whose job has ended becomes `cancelled` (nobody waits for it); null when it is not such a token. */
  private async endIfJobEnded(id: string, now: Date): Promise<WaitTokenSettleOutcome | null> {
    const current = await this.tokens.findOne({ _id: id }, { projection: { jobId: 1, status: 1, jobRoute: 1 } });
    this.learnRoute(current);
    if (current?.status !== 'pending') return null;
    const ended = await this.endedStatus(current.jobId);
    if (ended === undefined) return null;
    const set = { status: 'cancelled' as const, settledAt: now, reason: endedJobReason(current.jobId, ended) };
    await this.tokens.updateOne({ _id: id, status: 'pending' }, { $set: set });
    const doc = await this.tokens.findOne({ _id: id });
    return doc ? { settled: false, token: toRecord(doc) } : null;
  }

  private async deliver(token: WaitTokenRecord, now: Date): Promise<void> {
    const name = waitTokenSignal(token.id);
    try {
      await storeSignal(this.jobs, token.jobId, { name, id: name, data: waitTokenSignalData(token), now });
    } catch (err) {
      // A job holding too many signals: its run reads the settled token itself when it looks for it.
      if (!LoomError.is(err, 'TOO_MANY_SIGNALS')) throw err;
    }
  }
}
