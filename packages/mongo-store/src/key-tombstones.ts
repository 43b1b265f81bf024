import { MongoBulkWriteError, type ClientSession, type Collection, type ObjectId } from 'mongodb';
import { withSession } from './collections.js';
import type { KeyTombstoneDocument } from './documents.js';
import { DUPLICATE_KEY } from './store-errors.js';

/**
 * `dedupe: 'forever'`: one tombstone per idempotency key ever used (`_id` = the key), pointing at
 * the key's first job. The tombstone is written after the job, so it never points at a job that
 * was not stored; a crash between the two leaves the job protected by the jobs collection's unique
 * index, and the next enqueue of that key writes the missing tombstone.
 */

/** The jobs already holding these keys. */
export async function findTombstones(keys: Collection<KeyTombstoneDocument>, wanted: string[], session?: ClientSession): Promise<Map<string, ObjectId>> {
  const owners = new Map<string, ObjectId>();
  if (wanted.length === 0) return owners;
  for (const doc of await keys.find({ _id: { $in: wanted } }, withSession(session)).toArray()) owners.set(doc._id, doc.jobId);
  return owners;
}

/** Writes a tombstone per key unless one exists; returns each key's owning job (first writer wins). */
export async function claimTombstones(
  keys: Collection<KeyTombstoneDocument>,
  claims: { key: string; jobId: ObjectId }[],
  now: Date,
  session?: ClientSession,
): Promise<Map<string, ObjectId>> {
  if (claims.length === 0) return new Map();
  try {
    await keys.bulkWrite(
      claims.map(({ key, jobId }) => ({
        updateOne: { filter: { _id: key }, update: { $setOnInsert: { jobId, at: now } }, upsert: true },
      })),
      { ordered: false, ...withSession(session) },
    );
  } catch (err) {
    // Two upserts of one new key can race to insert it; the loser's duplicate-key error just means
    // the other won, which the read below reports.
    const writeErrors = err instanceof MongoBulkWriteError ? [err.writeErrors].flat() : [];
    if (writeErrors.length === 0 || writeErrors.some((e) => e.code !== DUPLICATE_KEY) || (err as MongoBulkWriteError).writeConcernError) throw err;
  }
  return findTombstones(keys, [...new Set(claims.map((c) => c.key))], session);
}
