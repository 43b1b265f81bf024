/**
 * Wait tokens in a MemoryStore: created by a run (fenced like a step), settled once by whoever
 * comes first, the settlement delivered to the job as a signal with the token's id.
 */
import { InvalidArgumentError, LoomError } from '../../support/errors.js';
import type { LeaseRef } from '../job-record.js';
import { waitTokenSignal, waitTokenSignalData, type WaitTokenRecord, type WaitTokenSettlement, type WaitTokenSettleOutcome } from '../wait-token.js';
import { assertDate, assertString } from './arguments.js';
import { clonePlain } from './clone.js';
import { copyDate } from './record-copy.js';
import * as signals from './signals.js';
import type { MemoryState } from './state.js';
import { leased } from './transition.js';

export function createWaitToken(state: MemoryState, lease: LeaseRef, token: WaitTokenRecord, now: Date): void {
  assertDate(now, 'createWaitToken now');
  assertString(token?.id, 'wait token id');
  if (token.jobId !== lease.jobId) throw new InvalidArgumentError('wait token jobId', `must be the lease's job ${lease.jobId}`);
  if (token.status !== 'pending') throw new InvalidArgumentError('wait token status', "must be 'pending'");
  leased(state, lease, 'createWaitToken');
  if (state.waitTokens.has(token.id)) throw new InvalidArgumentError('wait token id', `"${token.id}" is taken; nothing was stored`);
  state.waitTokens.set(token.id, clonePlain(token));
}

export function getWaitToken(state: MemoryState, id: string): WaitTokenRecord | null {
  const token = state.waitTokens.get(id);
  return token ? clonePlain(token) : null;
}

export function settleWaitToken(state: MemoryState, id: string, req: { settlement: WaitTokenSettlement; now: Date }): WaitTokenSettleOutcome | null {
  assertDate(req?.now, 'settleWaitToken now');
  const { settlement, now } = req;
  const token = state.waitTokens.get(id);
  if (!token) return null;
  const settled = token.status === 'pending' && settles(token, settlement, now);
  if (settled) {
    token.status = settlement.status;
    token.settledAt = copyDate(now);
    if (settlement.status === 'completed' && settlement.output !== undefined) token.output = clonePlain(settlement.output);
    if (settlement.status === 'rejected' && settlement.reason !== undefined) token.reason = settlement.reason;
  }
  if (token.status !== 'pending') deliver(state, token, now);
  return { settled, token: clonePlain(token) };
}

/** Whether `settlement` may settle the pending `token` at `now`: completions before its timeout, a time-out from then on. */
export function settles(token: Pick<WaitTokenRecord, 'timeoutAt'>, settlement: WaitTokenSettlement, now: Date): boolean {
  const timedOut = token.timeoutAt !== undefined && token.timeoutAt.getTime() <= now.getTime();
  return settlement.status === 'timed-out' ? timedOut : !timedOut;
}

function deliver(state: MemoryState, token: WaitTokenRecord, now: Date): void {
  const name = waitTokenSignal(token.id);
  try {
    signals.signal(state, token.jobId, { name, id: name, data: waitTokenSignalData(token), now });
  } catch (err) {
    // A job holding too many signals: its run reads the settled token itself when it looks for it.
    if (!LoomError.is(err, 'TOO_MANY_SIGNALS')) throw err;
  }
}
