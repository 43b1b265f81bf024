import { MongoBulkWriteError, type AnyBulkWriteOperation, type Collection, type ObjectId } from 'mongodb';
import { LoomError, type LeaseRef } from '@loom/core';
import type { JobDocument } from '../schema/documents.js';
import type { FencedWrites } from './fenced-writes.js';

/**
 * The job id of each item's lease, for a batch of fenced writes (`completeMany`, `heartbeatMany`).
 * An id that no job can have is that item's `'lost'` (undefined here); a malformed lease is bad
 * input for the whole call (thrown, nothing written).
 */
export function leaseIdsOf(fenced: FencedWrites, items: { lease: LeaseRef }[], outcomes: unknown[]): (ObjectId | undefined)[] {
  return items.map((item, i) => {
    try {
      return fenced.jobIdOf(item.lease);
    } catch (err) {
      if (!LoomError.is(err, 'LEASE_LOST')) throw err;
      outcomes[i] = 'lost';
      return undefined;
    }
  });
}

/**
 * One unordered bulk write of `statements`: how many matched, and the statements the server
 * refused alone (by index, with its message). Anything else — the call failed as a whole — is thrown.
 */
export async function bulkWriteFenced(
  jobs: Collection<JobDocument>,
  statements: AnyBulkWriteOperation<JobDocument>[],
): Promise<{ matched: number; refused: { index: number; message: string; cause: unknown }[] }> {
  try {
    return { matched: (await jobs.bulkWrite(statements, { ordered: false })).matchedCount, refused: [] };
  } catch (err) {
    if (!(err instanceof MongoBulkWriteError) || err.writeErrors === undefined) throw err;
    const writeErrors = [err.writeErrors].flat();
    // A command that failed as a whole (MaxTimeMSExpired, a step-down's NotWritablePrimary or
    // InterruptedDueToReplStateChange after the driver's retry) still comes as a MongoBulkWriteError,
    // with no write error of its own: the call failed, and its caller's retry must see it.
    if (writeErrors.length === 0) throw err;
    return { matched: err.result.matchedCount, refused: writeErrors.map((e) => ({ index: e.index, message: e.errmsg ?? 'refused', cause: err })) };
  }
}
