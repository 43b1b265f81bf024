import { MongoBulkWriteError, ObjectId, type ClientSession, type Filter } from 'mongodb';
import { routeFilter, routeName } from '../partitions/partitions.js';
import type { EnqueueResult, NewJob } from '@loom/core';
import { withSession, type StoreCollections } from '../connection/collections.js';
import type { JobDocument } from '../schema/documents.js';
import { idempotencyKeysFilter } from '../schema/filters.js';
import { DUPLICATE_KEY, isDuplicateKey, StoreArgumentError, StoreOperationError } from '../store-errors.js';
import { claimTombstones, finalizeTombstones, findTombstones } from './key-tombstones.js';
import { releaseHolds } from '../writes/retention-holds.js';
import { debounceUpdate, newJobDocument } from '../schema/updates.js';
import type { OffloadedValues, PendingFile } from '../payloads/offloaded-values.js';

/** How often a key is retried when its holder vanished between our insert and our lookup. */
const MAX_KEY_ROUNDS = 5;

export interface EnqueueContext {
  collections: StoreCollections;
  /** The payload bucket: payloads over the threshold go there (offloaded-values.ts). */
  values: OffloadedValues;
  dedupe: 'retained' | 'forever';
  session?: ClientSession;
  /** Partitioned queues: sets a new job's partition (see partitions.ts). */
  place?: (doc: JobDocument) => void;
  /** The jobs collection is sharded: key lookups name each key's queue and partition, reaching one shard. */
  sharded?: boolean;
}

/**
 * Stores new jobs; a taken idempotency key resolves to the job holding it. The unique index decides
 * every race: the batch is inserted unordered, and each duplicate-key failure is looked up
 * afterwards. All documents are built (and validated) before the first write, so bad input
 * stores nothing. With `dedupe: 'forever'` each key's tombstone is claimed before its job is
 * stored (see key-tombstones.ts).
 */
export async function enqueueJobs(ctx: EnqueueContext, jobs: NewJob[], now: Date): Promise<EnqueueResult[]> {
  if (!Array.isArray(jobs)) throw new StoreArgumentError('enqueue expects an array of jobs');
  const docs = jobs.map((job) => newJobDocument(job, now));
  if (ctx.place) for (const doc of docs) ctx.place(doc);
  if (docs.some((doc) => doc.debounceKey !== undefined)) {
    ctx.values.checkPayloads(docs); // a payload over the limit stores none of the call
    if (ctx.session) {
      throw new StoreArgumentError(
        'MongoStore: a debounced job (debounceKey) cannot be enqueued inside a transaction: it may update a queued job rather than add one; enqueue it after the transaction commits. Nothing was enqueued',
      );
    }
    // In order, one by one: a later job of the batch may debounce into an earlier one.
    const results: EnqueueResult[] = [];
    for (const doc of docs)
      results.push(doc.debounceKey === undefined ? (await enqueueJobs(ctx, [jobs[results.length]!], now))[0]! : await enqueueDebounced(ctx, doc, now));
    return results;
  }
  const results = new Array<EnqueueResult | undefined>(docs.length);
  // Checked before the first write; their files are written once the ids are final (claimKeys may take a tombstone's).
  const files = ctx.values.preparePayloads(docs);
  const forever = ctx.dedupe === 'forever' ? await claimKeys(ctx, docs, results, now) : undefined;
  await ctx.values.writeFiles(
    files.filter((file) => results[docs.indexOf(file.owner as JobDocument)] === undefined),
    now,
    ctx.session,
  );

  let pending = docs.map((_, i) => i).filter((i) => results[i] === undefined);
  for (let round = 0; pending.length > 0; round++) {
    if (round === MAX_KEY_ROUNDS) {
      throw new StoreOperationError(`enqueue: idempotency keys kept changing hands during ${MAX_KEY_ROUNDS} attempts; retry the enqueue`);
    }
    const duplicates = await insertReportingDuplicates(
      ctx,
      pending.map((i) => docs[i]),
    );
    const inserted = pending.filter((_, j) => !duplicates.has(j));
    for (const i of inserted) results[i] = { id: docs[i]._id.toHexString(), deduplicated: false };
    const dupIndexes = pending.filter((_, j) => duplicates.has(j));
    const holders = await findKeyHolders(
      ctx,
      dupIndexes.map((i) => docs[i]),
    );
    for (const i of dupIndexes) {
      const holder = holders.get(docs[i].idempotencyKey!);
      if (holder) results[i] = { id: holder.toHexString(), deduplicated: true };
    }
    // A holder gone by the time we looked (it died or retention removed it): try again.
    pending = dupIndexes.filter((i) => results[i] === undefined);
  }

  if (forever) await forever.finish();
  forever?.copyBatchDuplicates();
  // The payload files of jobs that were deduplicated (their key was taken) are not needed.
  const unused = docs.filter((doc, i) => results[i]!.deduplicated && doc.payloadRef !== undefined).map((doc) => doc.payloadRef!.fileId);
  if (unused.length > 0) await ctx.values.deleteFiles(unused, ctx.session);
  return results as EnqueueResult[];
}

/**
 * A debounced job: the queued, never-started job of its key takes its payload and start (one
 * atomic update), or, when there is none, it is inserted. The unique debounce index decides a race
 * of two inserts: the loser updates the winner's job instead.
 */
async function enqueueDebounced(ctx: EnqueueContext, doc: JobDocument, now: Date): Promise<EnqueueResult> {
  const { jobs } = ctx.collections;
  const [file] = ctx.values.preparePayloads([doc]);
  for (let round = 0; round < MAX_KEY_ROUNDS; round++) {
    const filter: Filter<JobDocument> = { debounceKey: { $eq: doc.debounceKey! }, status: 'queued' };
    // The partition comes from the debounce key, so the job of this key is in this job's partition.
    if (ctx.place) Object.assign(filter, routeFilter({ queue: doc.queue, partition: doc.partition ?? 0 }));
    if (file) {
      const outcome = await debounceLarge(ctx, doc, filter, file, now);
      if (outcome) return outcome;
      continue;
    }
    const updated = await jobs.findOneAndUpdate(filter, debounceUpdate(doc), { projection: { _id: 1, payloadRef: 1 } });
    if (updated) {
      // The replaced payload's file, if it had one: the job references the new one now.
      if (updated.payloadRef) await ctx.values.deleteFiles([updated.payloadRef.fileId]);
      return { id: updated._id.toHexString(), deduplicated: false, debounced: true };
    }
    try {
      await jobs.insertOne(doc);
      return { id: doc._id.toHexString(), deduplicated: false };
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
  }
  throw new StoreOperationError(
    `enqueue: the job of debounce key ${JSON.stringify(doc.debounceKey)} kept changing during ${MAX_KEY_ROUNDS} attempts; retry the enqueue`,
  );
}

/**
 * One round of {@link enqueueDebounced} for a payload that goes to the payload bucket: its file
 * names the job that will hold it (the sweep asks that job whether it still references the file),
 * so the queued job of the key is read first. Null when the round lost a race (that job started,
 * or another insert took the key): its file is deleted, and the next round tries again.
 */
async function debounceLarge(ctx: EnqueueContext, doc: JobDocument, filter: Filter<JobDocument>, file: PendingFile, now: Date): Promise<EnqueueResult | null> {
  const { jobs } = ctx.collections;
  const holder = await jobs.findOne(filter, { projection: { _id: 1 } });
  file.owner = holder ?? doc;
  file.ref.fileId = new ObjectId(); // doc.payloadRef is file.ref: each round writes a file of its own
  await ctx.values.writeFiles([file], now, undefined);
  if (holder) {
    const updated = await jobs.findOneAndUpdate({ ...filter, _id: holder._id }, debounceUpdate(doc), { projection: { _id: 1, payloadRef: 1 } });
    if (updated) {
      if (updated.payloadRef) await ctx.values.deleteFiles([updated.payloadRef.fileId]);
      return { id: updated._id.toHexString(), deduplicated: false, debounced: true };
    }
  } else {
    try {
      await jobs.insertOne(doc);
      return { id: doc._id.toHexString(), deduplicated: false };
    } catch (err) {
      if (!isDuplicateKey(err)) {
        await ctx.values.deleteFiles([file.ref.fileId]).catch(() => undefined); // else the sweep does
        throw err;
      }
    }
  }
  await ctx.values.deleteFiles([file.ref.fileId]);
  return null;
}

/**
 * `dedupe: 'forever'`, before anything is inserted: claims each key's tombstone (pending, naming
 * the job's id) or resolves the tombstone found. Sets the result of each job whose key is taken;
 * the others are inserted. Returns what to do once the inserts are done.
 */
async function claimKeys(ctx: EnqueueContext, docs: JobDocument[], results: (EnqueueResult | undefined)[], now: Date) {
  const { keys, jobs, deadLetters } = ctx.collections;
  const first = new Map<string, number>();
  const sameAs = new Map<number, number>();
  docs.forEach((doc, i) => {
    const key = doc.idempotencyKey;
    if (key === undefined) return;
    doc.holdForKey = true; // until its tombstone is final, the job is the proof that the key was used
    const earlier = first.get(key);
    if (earlier === undefined) first.set(key, i);
    else sameAs.set(i, earlier);
  });
  for (const i of sameAs.keys()) results[i] = { id: '', deduplicated: true }; // filled in by copyBatchDuplicates

  const found = await findTombstones(keys, [...first.keys()], ctx.session);
  const unclaimed = [...first].filter(([key]) => !found.has(key)).map(([key, i]) => ({ key, jobId: docs[i]._id }));
  for (const [key, tombstone] of await claimTombstones(keys, unclaimed, now, ctx.session)) found.set(key, tombstone);

  const othersPending: Array<{ key: string; i: number; owner: ObjectId }> = [];
  for (const [key, i] of first) {
    const tombstone = found.get(key)!;
    if (tombstone.jobId.equals(docs[i]._id)) continue; // ours: insert the job
    if (!tombstone.pending) results[i] = { id: tombstone.jobId.toHexString(), deduplicated: true };
    else othersPending.push({ key, i, owner: tombstone.jobId });
  }

  // Another enqueue claimed the key and has not confirmed its job: it is storing it right now, or
  // it died before (no job) or after (a job) storing it.
  const finals: { key: string; from: ObjectId; jobId: ObjectId }[] = [];
  const released: ObjectId[] = [];
  if (othersPending.length > 0) {
    const holders = await findKeyHolders(
      ctx,
      othersPending.map((p) => docs[p.i]),
    );
    const gone = othersPending.filter((p) => !holders.has(p.key)).map((p) => p.owner);
    const dead = new Set(
      gone.length === 0
        ? []
        : (await deadLetters.find({ _id: { $in: gone } }, { projection: { _id: 1 }, ...withSession(ctx.session) }).toArray()).map((d) => d._id.toHexString()),
    );
    for (const { key, i, owner } of othersPending) {
      const holder = holders.get(key) ?? (dead.has(owner.toHexString()) ? owner : undefined);
      if (holder) {
        results[i] = { id: holder.toHexString(), deduplicated: true };
        finals.push({ key, from: owner, jobId: holder });
        released.push(holder);
      } else {
        // Nowhere: store ours under the id the tombstone names. Should the first enqueue still be
        // storing it, one of the two inserts wins on the _id and the other deduplicates.
        docs[i]._id = owner;
      }
    }
  }

  // Keys whose job goes to the inserts: the tombstone names that job's id, pending.
  const inserting = [...first].filter(([, i]) => results[i] === undefined);
  return {
    /** After the inserts: each of those tombstones final, naming the job holding its key; holds released. */
    async finish(): Promise<void> {
      for (const [key, i] of inserting) {
        // Our job, or the job that held the key already (stored by a concurrent enqueue under
        // the same id, or before 'forever' was turned on).
        const holder = ObjectId.createFromHexString(results[i]!.id);
        finals.push({ key, from: docs[i]._id, jobId: holder });
        released.push(holder);
      }
      await finalizeTombstones(keys, finals, ctx.session);
      if (released.length > 0) await releaseHolds(jobs, { _id: { $in: released } }, 'holdForKey', ctx.session);
    },
    copyBatchDuplicates(): void {
      for (const [i, earlier] of sameAs) results[i] = { id: results[earlier]!.id, deduplicated: true };
    },
  };
}

/** Inserts `docs` unordered; returns the positions refused by the idempotency index. */
async function insertReportingDuplicates(ctx: EnqueueContext, docs: JobDocument[]): Promise<Set<number>> {
  const duplicates = new Set<number>();
  if (ctx.session) {
    // Inside a transaction any write error aborts the whole transaction, so taken keys are looked
    // up first and only free ones are inserted (a concurrent insert of the same key aborts it).
    const taken = await findKeyHolders(ctx, docs);
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
  if (docs.length === 1) {
    // One job (every `enqueue`) as `insertOne`: the driver's bulk machinery behind `insertMany`
    // cost ~0.15 ms more before the command left, on the enqueue → start path (bench/README.md,
    // issue 33 item 6). A write-concern error arrives as MongoWriteConcernError, never code 11000.
    try {
      await ctx.collections.jobs.insertOne(docs[0]!);
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      duplicates.add(0);
    }
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

/**
 * The jobs holding the idempotency keys of `docs`. On a sharded jobs collection keys are unique per
 * queue (the unique index starts with the shard key) and a key's partition is its hash's: one query
 * per queue and partition, each reaching one shard.
 */
async function findKeyHolders(ctx: EnqueueContext, docs: JobDocument[]): Promise<Map<string, ObjectId>> {
  const holders = new Map<string, ObjectId>();
  const keyed = docs.filter((d) => d.idempotencyKey !== undefined);
  if (keyed.length === 0) return holders;
  const groups = new Map<string, { filter: Filter<JobDocument>; keys: Set<string> }>();
  for (const doc of keyed) {
    const route = { queue: doc.queue, partition: doc.partition ?? 0 };
    const name = ctx.sharded ? routeName(route) : '';
    const group = groups.get(name) ?? { filter: ctx.sharded ? routeFilter(route) : {}, keys: new Set<string>() };
    group.keys.add(doc.idempotencyKey!);
    groups.set(name, group);
  }
  const found = await Promise.all(
    [...groups.values()].map(({ filter, keys }) =>
      ctx.collections.jobs
        .find({ ...idempotencyKeysFilter([...keys]), ...filter }, { projection: { _id: 1, idempotencyKey: 1 }, ...withSession(ctx.session) })
        .toArray(),
    ),
  );
  for (const doc of found.flat()) holders.set(doc.idempotencyKey!, doc._id);
  return holders;
}
