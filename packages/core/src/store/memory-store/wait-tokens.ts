/**
 * Wait tokens in a MemoryStore: created by a run (fenced like a step), settled once by whoever
 * comes first, the settlement delivered to the job as a signal with the token's id.
 */
import { InvalidArgumentError, LoomError } from '../../support/errors.js';
import type { JobStatus, LeaseRef } from '../job-record.js';
import {
  endedJobReason,
  waitTokenSignal,
  waitTokenSignalData,
  type WaitTokenRecord,
  type WaitTokenSettlement,
  type WaitTokenSettleOutcome,
} from '../wait-token.js';
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
  const ids = state.waitTokensByJob.get(token.jobId);
  if (ids) ids.push(token.id);
  else state.waitTokensByJob.set(token.jobId, [token.id]);
}

export function listWaitTokens(state: MemoryState, jobId: string): WaitTokenRecord[] {
  assertString(jobId, 'listWaitTokens jobId');
  const tokens = (state.waitTokensByJob.get(jobId) ?? []).map((id) => clonePlain(state.waitTokens.get(id)!));
  return tokens.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The status of the job `jobId` when it has ended (or `null` when it is gone); undefined while it has not ended. */
function endedStatus(state: MemoryState, jobId: string): JobStatus | null | undefined {
  const job = state.find(jobId);
  if (!job) return null;
  const { status } = job.record;
  return status === 'completed' || status === 'dead' || status === 'cancelled' ? status : undefined;
}

function end(token: WaitTokenRecord, jobStatus: JobStatus | null, now: Date): void {
  token.status = 'cancelled';
  token.settledAt = copyDate(now);
  token.reason = endedJobReason(token.jobId, jobStatus);
}

export function endWaitTokens(state: MemoryState, jobId: string, now: Date): number {
  assertString(jobId, 'endWaitTokens jobId');
  assertDate(now, 'endWaitTokens now');
  const ended = endedStatus(state, jobId);
  if (ended === undefined) return 0;
  let n = 0;
  for (const id of state.waitTokensByJob.get(jobId) ?? []) {
    const token = state.waitTokens.get(id)!;
    if (token.status !== 'pending') continue;
    end(token, ended, now);
    n += 1;
  }
  return n;
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
  if (token.status === 'pending' && settlement.status !== 'timed-out') {
    // Its job ended: nobody waits for it any more.
    const ended = endedStatus(state, token.jobId);
    if (ended !== undefined) {
      end(token, ended, now);
      return { settled: false, token: clonePlain(token) };
    }
  }
  const settled = token.status === 'pending' && settles(token, settlement, now);
  if (settled) {
    token.status = settlement.status;
    token.settledAt = copyDate(now);
    if (settlement.status === 'completed' && settlement.output !== undefined) token.output = clonePlain(settlement.output);
    if (settlement.status === 'rejected' && settlement.reason !== undefined) token.reason = settlement.reason;
  }
  if (token.status !== 'pending' && token.status !== 'cancelled') deliver(state, token, now);
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
