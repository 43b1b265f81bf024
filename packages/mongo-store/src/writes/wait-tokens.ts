import type { Collection, Filter } from 'mongodb';
import {
  InvalidArgumentError,
  LoomError,
  waitTokenSignal,
  waitTokenSignalData,
  type LeaseRef,
  type WaitTokenRecord,
  type WaitTokenSettlement,
  type WaitTokenSettleOutcome,
} from '@loom/core';
import { requireDate, requireString } from '../arguments.js';
import type { JobDocument, WaitTokenDocument } from '../schema/documents.js';
import { touchUpdate } from '../schema/updates.js';
import { StoreArgumentError } from '../store-errors.js';
import type { FencedWrites } from './fenced-writes.js';
import { storeSignal } from './signals.js';

const DUPLICATE_KEY = 11000;

function toRecord(doc: WaitTokenDocument): WaitTokenRecord {
  const { _id, ...rest } = doc;
  return { id: _id, ...rest };
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
  ) {}

  async create(lease: LeaseRef, token: WaitTokenRecord, now: Date): Promise<void> {
    requireDate(now, 'now');
    if (typeof token !== 'object' || token === null) throw new StoreArgumentError('wait token must be an object');
    const id = requireString(token.id, 'wait token id');
    if (token.jobId !== lease?.jobId) throw new InvalidArgumentError('wait token jobId', `must be the lease's job ${String(lease?.jobId)}`);
    if (token.status !== 'pending') throw new InvalidArgumentError('wait token status', "must be 'pending'");
    // The fence first: a run that lost its lease stores no token.
    await this.fenced.write('createWaitToken', lease, touchUpdate(now));
    const { id: _ignored, ...fields } = token;
    try {
      await this.tokens.insertOne({ _id: id, ...fields });
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
    const filter: Filter<WaitTokenDocument> = { _id: id, status: 'pending' };
    if (status === 'timed-out') filter.timeoutAt = { $lte: now };
    else filter.$or = [{ timeoutAt: { $exists: false } }, { timeoutAt: { $gt: now } }];
    const set: Partial<WaitTokenDocument> = { status, settledAt: now };
    if (settlement.status === 'completed' && settlement.output !== undefined) set.output = settlement.output;
    if (settlement.status === 'rejected' && settlement.reason !== undefined) set.reason = requireString(settlement.reason, 'reason');
    const after = await this.tokens.findOneAndUpdate(filter, { $set: set }, { returnDocument: 'after' });
    const doc = after ?? (await this.tokens.findOne({ _id: id }));
    if (!doc) return null;
    const token = toRecord(doc);
    if (token.status !== 'pending') await this.deliver(token, now);
    return { settled: after !== null, token };
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
