import { MongoBulkWriteError, ObjectId, type ClientSession } from 'mongodb';
import type { EnqueueResult, NewJob } from '@loom/core';
import { LoomError } from '@loom/core';
import { withSession, type StoreCollections } from './collections.js';
import type { JobDocument } from './documents.js';
import { idempotencyKeysFilter } from './filters.js';
import { DUPLICATE_KEY, isDuplicateKey } from './store-errors.js';
import { claimTombstones, findTombstones } from './key-tombstones.js';
import { debounceUpdate, newJobDocument } from './updates.js';

/** How often a key is retried when its holder vanished between our insert and our lookup. */
const MAX_KEY_ROUNDS = 5;

export interface EnqueueContext {
  collections: StoreCollections;
  dedupe: 'retained' | 'forever';
  session?: ClientSession;
}

/**
 * Stores new jobs; a taken idempotency key resolves to the job holding it. The unique index decides
 * every race: the batch is inserted unordered, and each duplicate-key failure is looked up
 * afterwards. All documents are built (and validated) before the first write, so bad input
 * stores nothing.
 */
export async function enqueueJobs(ctx: EnqueueContext, jobs: NewJob[], now: Date): Promise<EnqueueResult[]> {
  if (!Array.isArray(jobs)) throw new LoomError('INVALID_ARGUMENT', 'enqueue expects an array of jobs');
  const docs = jobs.map((job) => newJobDocument(job, now));
  if (docs.some((doc) => doc.debounceKey !== undefined)) {
    if (ctx.session) {
      throw new LoomError(
        'INVALID_ARGUMENT',
        'MongoStore: a debounced job (debounceKey) cannot be enqueued inside a transaction: it may update a queued job rather than add one; enqueue it after the transaction commits. Nothing was enqueued',
      );
    }
    // In order, one by one: a later job of the batch may debounce into an earlier one.
    const results: EnqueueResult[] = [];
    for (const doc of docs) results.push(doc.debounceKey === undefined ? (await enqueueJobs(ctx, [jobs[results.length]!], now))[0]! : await enqueueDebounced(ctx, doc));
    return results;
  }
  const results: (EnqueueResult | undefined)[] = new Array(docs.length);

  if (ctx.dedupe === 'forever') {
    // A key used once, even by a job long removed, stays taken.
    const used = await findTombstones(ctx.collections.keys, keysOf(docs), ctx.session);
    docs.forEach((doc, i) => {
      const holder = doc.idempotencyKey === undefined ? undefined : used.get(doc.idempotencyKey);
      if (holder) results[i] = { id: holder.toHexString(), deduplicated: true };
    });
  }

  let pending = docs.map((_, i) => i).filter((i) => results[i] === undefined);
  for (let round = 0; pending.length > 0; round++) {
    if (round === MAX_KEY_ROUNDS) {
      throw new LoomError('STORE_ERROR', `enqueue: idempotency keys kept changing hands during ${MAX_KEY_ROUNDS} attempts; retry the enqueue`);
    }
    const duplicates = await insertReportingDuplicates(ctx, pending.map((i) => docs[i]));
    const inserted = pending.filter((_, j) => !duplicates.has(j));
    for (const i of inserted) results[i] = { id: docs[i]._id.toHexString(), deduplicated: false };
    const dupIndexes = pending.filter((_, j) => duplicates.has(j));
    const holders = await findKeyHolders(ctx, dupIndexes.map((i) => docs[i].idempotencyKey!));
    for (const i of dupIndexes) {
      const holder = holders.get(docs[i].idempotencyKey!);
      if (holder) results[i] = { id: holder.toHexString(), deduplicated: true };
    }
    // A holder gone by the time we looked (it died or retention removed it): try again.
    pending = dupIndexes.filter((i) => results[i] === undefined);
  }

  if (ctx.dedupe === 'forever') await recordTombstones(ctx, docs, results, now);
  return results as EnqueueResult[];
}

/**
 * A debounced job: the queued, never-started job of its key takes its payload and start (one
 * atomic update), or, when there is none, it is inserted. The unique debounce index decides a race
 * of two inserts: the loser updates the winner's job instead.
 */
async function enqueueDebounced(ctx: EnqueueContext, doc: JobDocument): Promise<EnqueueResult> {
  const { jobs } = ctx.collections;
  for (let round = 0; round < MAX_KEY_ROUNDS; round++) {
    const updated = await jobs.findOneAndUpdate({ debounceKey: { $eq: doc.debounceKey! }, status: 'queued' }, debounceUpdate(doc), { projection: { _id: 1 } });
    if (updated) return { id: updated._id.toHexString(), deduplicated: false, debounced: true };
    try {
      await jobs.insertOne(doc);
      return { id: doc._id.toHexString(), deduplicated: false };
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
  }
  throw new LoomError('STORE_ERROR', `enqueue: the job of debounce key ${JSON.stringify(doc.debounceKey)} kept changing during ${MAX_KEY_ROUNDS} attempts; retry the enqueue`);
}

function keysOf(docs: JobDocument[]): string[] {
  return [...new Set(docs.flatMap((d) => (d.idempotencyKey === undefined ? [] : [d.idempotencyKey])))];
}

/** Inserts `docs` unordered; returns the positions refused by the idempotency index. */
async function insertReportingDuplicates(ctx: EnqueueContext, docs: JobDocument[]): Promise<Set<number>> {
  const duplicates = new Set<number>();
  if (ctx.session) {
    // Inside a transaction any write error aborts the whole transaction, so taken keys are looked
    // up first and only free ones are inserted (a concurrent insert of the same key aborts it).
    const taken = await findKeyHolders(ctx, keysOf(docs));
    const firstByKey = new Map<string, number>();
    const fresh = docs.filter((doc, i) => {
      const key = doc.idempotencyKey;
      if (key === undefined) return true;
      if (taken.has(key) || firstByKey.has(key)) {
        duplicates.add(i);
        return false;
      }
      firstByKey.set(key, i);
      return true;
    });
    if (fresh.length > 0) await ctx.collections.jobs.insertMany(fresh, { session: ctx.session });
    return duplicates;
  }
  try {
    await ctx.collections.jobs.insertMany(docs, { ordered: false });
  } catch (err) {
    // Only duplicate keys are an answer; a bulk error without write errors (a network failure, a
    // write-concern error) must reach the caller, or jobs that were never stored would look stored.
    const writeErrors = err instanceof MongoBulkWriteError ? [err.writeErrors].flat() : [];
    if (writeErrors.length === 0 || writeErrors.some((e) => e.code !== DUPLICATE_KEY) || (err as MongoBulkWriteError).writeConcernError) throw err;
    for (const e of writeErrors) duplicates.add(e.index);
  }
  return duplicates;
}

async function findKeyHolders(ctx: EnqueueContext, keys: string[]): Promise<Map<string, ObjectId>> {
  const holders = new Map<string, ObjectId>();
  if (keys.length === 0) return holders;
  const found = await ctx.collections.jobs
    .find(idempotencyKeysFilter(keys), { projection: { _id: 1, idempotencyKey: 1 }, ...withSession(ctx.session) })
    .toArray();
  for (const doc of found) holders.set(doc.idempotencyKey!, doc._id);
  return holders;
}

/**
 * `dedupe: 'forever'`: writes a tombstone for each key. When another job's tombstone won the race
 * (its job is gone from the jobs collection, so our insert succeeded), our job is withdrawn and the
 * result points at the key's first job instead.
 */
async function recordTombstones(ctx: EnqueueContext, docs: JobDocument[], results: (EnqueueResult | undefined)[], now: Date): Promise<void> {
  const claims = docs.flatMap((doc, i) => {
    const result = results[i];
    if (doc.idempotencyKey === undefined || !result) return [];
    return [{ key: doc.idempotencyKey, doc, index: i, jobId: result.deduplicated ? ObjectId.createFromHexString(result.id) : doc._id }];
  });
  const owners = await claimTombstones(ctx.collections.keys, claims, now, ctx.session);
  for (const claim of claims) {
    const owner = owners.get(claim.key);
    if (!owner || owner.equals(claim.jobId)) continue;
    if (!results[claim.index]!.deduplicated) {
      await ctx.collections.jobs.deleteOne({ _id: claim.doc._id, status: 'queued', attempt: 0 }, withSession(ctx.session));
    }
    results[claim.index] = { id: owner.toHexString(), deduplicated: true };
  }
}
