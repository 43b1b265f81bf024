import { MongoBulkWriteError, type ClientSession, type Collection, type ObjectId } from 'mongodb';
import { withSession } from '../connection/collections.js';
import type { KeyTombstoneDocument } from '../schema/documents.js';
import { DUPLICATE_KEY } from '../store-errors.js';

/**
 * `dedupe: 'forever'`: one tombstone per idempotency key ever used (`_id` = the key), pointing at
 * the key's job. It is written **before** the job, `pending`, naming the id the job will be stored
 * under; once the job is stored the tombstone becomes final. So no crash frees a key:
 * - a crash before the job was stored leaves a pending tombstone naming a job that is nowhere: the
 *   next enqueue of the key stores its job under that very id (the first caller never got an
 *   answer, so nobody holds a different one);
 * - a crash after it leaves a pending tombstone and a job that retention may not remove (it holds
 *   `holdForKey`, see retention-holds.ts): the next enqueue of the key finds the job, and finalizes
 *   the tombstone.
 */

/** The tombstones of these keys. */
export async function findTombstones(
  keys: Collection<KeyTombstoneDocument>,
  wanted: string[],
  session?: ClientSession,
): Promise<Map<string, KeyTombstoneDocument>> {
  const found = new Map<string, KeyTombstoneDocument>();
  if (wanted.length === 0) return found;
  for (const doc of await keys.find({ _id: { $in: wanted } }, withSession(session)).toArray()) found.set(doc._id, doc);
  return found;
}

/**
 * Writes a pending tombstone per key unless one exists; returns every key's tombstone (first
 * writer wins).
 */
export async function claimTombstones(
  keys: Collection<KeyTombstoneDocument>,
  claims: { key: string; jobId: ObjectId }[],
  now: Date,
  session?: ClientSession,
): Promise<Map<string, KeyTombstoneDocument>> {
  if (claims.length === 0) return new Map();
  try {
    await keys.bulkWrite(
      claims.map(({ key, jobId }) => ({
        updateOne: { filter: { _id: key }, update: { $setOnInsert: { jobId, at: now, pending: true } }, upsert: true },
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

/**
 * Makes tombstones final, each naming the job that holds its key. Conditional on the tombstone
 * still naming `from` (the job it named when read), so of two enqueuers resolving one key the
 * second changes nothing.
 */
export async function finalizeTombstones(
  keys: Collection<KeyTombstoneDocument>,
  finals: { key: string; from: ObjectId; jobId: ObjectId }[],
  session?: ClientSession,
): Promise<void> {
  if (finals.length === 0) return;
  await keys.bulkWrite(
    finals.map(({ key, from, jobId }) => ({
      updateOne: { filter: { _id: key, jobId: from }, update: { $set: { jobId }, $unset: { pending: '' } } },
    })),
    { ordered: false, ...withSession(session) },
  );
}
