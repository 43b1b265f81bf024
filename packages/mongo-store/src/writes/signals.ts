import type { Collection } from 'mongodb';
import { MAX_PENDING_SIGNALS, TooManySignalsError } from '@loom/core';
import { parseJobId, requireDate, requireString } from '../arguments.js';
import type { JobDocument } from '../schema/documents.js';
import { signalRoomConditions, unfinishedNotWaitingForFilter, waitingForSignalFilter } from '../schema/filters.js';
import { signalUpdate } from '../schema/updates.js';
import { tooManyRounds } from '../store-errors.js';
import { MAX_CONDITIONAL_ROUNDS } from './fenced-writes.js';

/**
 * `signal`: stores a signal on an unfinished job, and queues it in the same write when it waits
 * for that signal (`signalWake`). Two conditional writes per round, because a job may begin
 * waiting between them; a signal with an id is stored once (see `signalRoomConditions`). False
 * when the job is gone or finished; TOO_MANY_SIGNALS when it holds `MAX_PENDING_SIGNALS` already.
 */
export async function storeSignal(
  jobs: Collection<JobDocument>,
  jobId: string,
  req: { name: string; data: unknown; now: Date; id?: string },
): Promise<boolean> {
  const id = parseJobId(jobId);
  const now = requireDate(req?.now, 'now');
  const name = requireString(req.name, 'signal name');
  const signalId = req.id === undefined ? undefined : requireString(req.id, 'signal id');
  if (!id) return false;
  const room = signalRoomConditions(signalId);
  for (let round = 0; round < MAX_CONDITIONAL_ROUNDS; round++) {
    if ((await jobs.updateOne({ ...waitingForSignalFilter(id, name), ...room }, signalUpdate(req, now, true))).matchedCount === 1) return true;
    if ((await jobs.updateOne({ ...unfinishedNotWaitingForFilter(id, name), ...room }, signalUpdate(req, now, false))).matchedCount === 1) return true;
    // Neither matched: the job is gone or finished, it holds this signal id or too many signals,
    // or it began waiting for this signal between the two writes (then the next round wakes it).
    const job = await jobs.findOne(
      { _id: id, status: { $in: ['queued', 'running', 'waiting'] } },
      { projection: { _id: 1, 'signals.id': 1, 'steps.signalId': 1 } },
    );
    if (!job) return false;
    if (signalId !== undefined && (job.signals.some((s) => s.id === signalId) || job.steps.some((s) => s.signalId === signalId))) return true;
    if (job.signals.length >= MAX_PENDING_SIGNALS) throw new TooManySignalsError(jobId, name, MAX_PENDING_SIGNALS);
  }
  throw tooManyRounds(`signal "${name}"`, jobId);
}
