import { MongoError, type AnyBulkWriteOperation, type Collection, type ObjectId } from 'mongodb';
import { holdsLease, LoomError, type CompletionItem, type CompletionOutcome, type LeaseRef } from '@loom/core';
import { requireDate } from '../arguments.js';
import type { JobDocument } from '../schema/documents.js';
import type { FencedWrites } from './fenced-writes.js';
import { fencedFilter, fencedManyFilter } from '../schema/filters.js';
import { bulkWriteFenced, leaseIdsOf } from './lease-batches.js';
import { completionStatements, factsOf, FACTS_PROJECTION, type CompletionFacts } from './completions.js';
import { stripeOf, type MongoBatches } from '../batches/batches.js';
import { groupBy } from '../group-by.js';
import { isTransientMongoError } from '../connection/transient-errors.js';
import { completeUpdate } from '../schema/updates.js';
import { StoreArgumentError, StoreOperationError } from '../store-errors.js';

/** What {@link completeMany} needs of the store besides the collection. */
export interface CompleteManyDeps {
  jobs: Collection<JobDocument>;
  fenced: FencedWrites;
  /**
   * The store's own `complete` of one job (retention holds, children, flow permits): the slow path.
   * `known`: the job's facts as the batch's read found them (`completeKeepingHolds`).
   */
  completeOne: (item: CompletionItem, now: Date, known?: CompletionFacts) => Promise<void>;
  /**
   * After the batch: the runs it completed end (their flow slots are freed, all at once), and those
   * it found lost are no longer this store's (their slots ended with their leases).
   */
  settleSlots: (completed: CompletionItem[], lost: CompletionItem[]) => Promise<void>;
  /** The batches' counts, moved in the transaction that completes members of one batch together. */
  batches: MongoBatches;
}

/**
 * Group commit of completions: one unordered bulk `update` carrying the statements of a lone
 * `complete`'s fast path (fenced by `_id` + lease token + `running` with no cancel requested, for a
 * job that enqueued no children; retention-held or not: of the two statements, at most one
 * matches a job). Jobs completed without a result share one pair of `updateMany` statements
 * fenced per job by `fencedManyFilter` (two statements for the whole batch instead of two per job:
 * building and serialising them per job was the largest part of a completion's client CPU, see
 * bench/README.md); a job with a result has its own pair. When every job matched — the common
 * case — that is the only command. Otherwise one read tells which did not: a job still `running`
 * under the item's token takes the store's own `complete` (it has children to release first, or
 * its cancel was requested: `'cancelled'`); one completed at this very `now` under the item's token
 * (`completedLease`, which the completion keeps) was completed by this call, for the first item of
 * that job and token only; anything else (a token that does not hold the lease: taken over, made
 * up, or a second item of a job the batch already completed; a job finished by another worker or
 * gone) is `'lost'`. A statement of
 * one job the server refused alone (e.g. a result that makes the document too large) is that
 * item's `{ error }`; the others stand. A single item goes through `complete` directly. The flow
 * slots of the runs the batch completed are freed together, by one more write, after the batch.
 */
export async function completeMany(deps: CompleteManyDeps, items: CompletionItem[], now: Date): Promise<CompletionOutcome[]> {
  const leases = Array.isArray(items) && items.every((item) => typeof item?.lease === 'object' && item.lease !== null);
  if (!leases) throw new StoreArgumentError('completeMany items must be an array of { lease, result? }');
  requireDate(now, 'now');
  const outcomes = new Array<CompletionOutcome | undefined>(items.length);
  const ids = leaseIdsOf(deps.fenced, items, outcomes);
  // Each job with a result or log lines gets its own update; log lines that are not valid make
  // their item's outcome an error, the others stand. The jobs with neither share one (below).
  const updates = items.map((item, i) => {
    if (ids[i] === undefined || (item.result === undefined && item.logs === undefined)) return undefined;
    try {
      return completeUpdate(item.result, now, item.logs);
    } catch (err) {
      outcomes[i] = { error: err as Error };
      ids[i] = undefined;
      return undefined;
    }
  });
  const call: Call = { deps, items, ids, updates, now, outcomes };
  const pending = items.map((_, i) => i).filter((i) => ids[i] !== undefined);
  // A single completion takes the store's own `complete`; more share the bulk write.
  const slow: Slow[] = pending.length === 1 ? [{ i: pending[0]! }] : [];
  const batch = pending.length === 1 ? [] : pending;
  if (batch.length > 0) {
    const { statements, sharedStatements, own } = statementsOf(call, batch, true);
    const refused = new Map<number, Error>();
    let sharedRefused = false;
    const written = await bulkWriteOnceMore(deps.jobs, statements);
    for (const { index, message, cause } of written.refused) {
      // A shared statement's refusal names no job: sortOut below tells which completed.
      if (index < sharedStatements) sharedRefused = true;
      else {
        const i = own[Math.floor((index - sharedStatements) / 2)]!; // two statements per job
        refused.set(i, new StoreOperationError(`completing job ${items[i]!.lease.jobId} failed: ${message}`, { cause }));
      }
    }
    const { matched } = written;
    for (const [i, error] of refused) outcomes[i] = { error };
    const rest = batch.filter((i) => !refused.has(i));
    if (!sharedRefused && matched === rest.length) for (const i of rest) outcomes[i] = 'completed';
    else slow.push(...(await sortOut(deps.jobs, rest, ids, items, now, outcomes)));
    const settled = batch.filter((i) => !slow.some((s) => s.i === i));
    await deps.settleSlots(
      settled.filter((i) => outcomes[i] === 'completed').map((i) => items[i]!),
      settled.filter((i) => outcomes[i] === 'lost').map((i) => items[i]!),
    );
  }
  const alone = await completeMembersTogether(call, slow);
  await Promise.all(
    inTurns(alone, ids).map(async (turn) => {
      for (const { i, known } of turn) outcomes[i] = await completeAlone(deps, items[i]!, now, known);
    }),
  );
  return outcomes as CompletionOutcome[];
}

/**
 * The fenced completion statements of the items at `indices` (see {@link completionStatements}):
 * those without a result or log lines share one pair (`sharedStatements` statements, first), each
 * other item (`own`, in order) has a pair of its own. `childless`: the fast path's condition.
 */
function statementsOf(
  { ids, items, updates, now }: Call,
  indices: number[],
  childless: boolean,
): { statements: AnyBulkWriteOperation<JobDocument>[]; sharedStatements: number; own: number[] } {
  const shared = indices.filter((i) => updates[i] === undefined);
  const own = indices.filter((i) => updates[i] !== undefined);
  const statements = [
    ...(shared.length === 0
      ? []
      : completionStatements(
          fencedManyFilter(
            'complete',
            shared.map((i) => ids[i]!),
            shared.map((i) => items[i]!.lease.token),
          ),
          completeUpdate(undefined, now),
          childless,
          true,
        )),
    ...own.flatMap((i) => completionStatements(fencedFilter('complete', ids[i]!, items[i]!.lease.token), updates[i]!, childless)),
  ];
  return { statements, sharedStatements: shared.length === 0 ? 0 : 2, own };
}

/** The members of a batch were not all completed together: each takes the slow path alone. */
class NotAllMembersMatched extends Error {}

/**
 * The slow path's batch members (without children to release), by batch: the members of one batch
 * complete together in one transaction — one bulk write of their fenced completions and their
 * batch's counts moved for all of them ({@link MongoBatches.movedMany}) — instead of one
 * transaction each, which cost ~3 commands per member and conflicted on the batch's documents.
 * Should any of them not complete (its lease lost, its cancel requested, a write refused), the
 * transaction is abandoned, changing nothing, and they take the slow path one by one, which tells
 * each one's outcome. Returns the items left for it.
 */
async function completeMembersTogether(call: Call, slow: Slow[]): Promise<Slow[]> {
  // A member without children to release: its batch.
  const batchOf = (item: Slow): string | undefined => (item.known?.parent === false ? item.known.batchId : undefined);
  const alone = slow.filter((item) => batchOf(item) === undefined);
  const byBatch = groupBy(
    slow.filter((item) => batchOf(item) !== undefined),
    (item) => batchOf(item)!,
  );
  // Different batches' transactions write different documents: side by side.
  await Promise.all(
    [...byBatch].map(async ([batchId, group]) => {
      const members = group.map((item) => item.i);
      if (members.length > 1 && (await completedTogether(call, batchId, members))) {
        for (const i of members) call.outcomes[i] = 'completed';
        await call.deps.settleSlots(
          members.map((i) => call.items[i]!),
          [],
        );
      } else alone.push(...group);
    }),
  );
  return alone;
}

/** One transaction completing `members` of batch `batchId`; false (nothing changed) when one of them did not complete. */
async function completedTogether(call: Call, batchId: string, members: number[]): Promise<boolean> {
  const { deps, ids, now } = call;
  const { statements } = statementsOf(call, members, false);
  try {
    await deps.batches.within(undefined, async (session) => {
      const written = await deps.jobs.bulkWrite(statements, { ordered: true, session });
      if (written.matchedCount !== members.length) throw new NotAllMembersMatched();
      await deps.batches.movedMany(
        batchId,
        members.map((i) => ids[i]!),
        'running',
        'completed',
        now,
        session,
      );
    });
    return true;
  } catch (err) {
    // Not swallowed: each member's own completion, next, meets what this was (a lost lease, a write
    // refused, the server unreachable) and reports it as that member's outcome, as it did before
    // members completed together (a commit whose outcome stayed unknown then reads as 'lost' where
    // it did complete, as a member's own transaction would). Anything but MongoDB's answer is a
    // fault here: thrown.
    if (err instanceof NotAllMembersMatched || err instanceof MongoError) return false;
    throw err;
  }
}

/** One `completeMany` call: what its steps share. */
interface Call {
  deps: CompleteManyDeps;
  items: CompletionItem[];
  /** Each item's job id; undefined where the item was refused before any write. */
  ids: (ObjectId | undefined)[];
  /** Each item's own update, where it has a result or log lines. */
  updates: (ReturnType<typeof completeUpdate> | undefined)[];
  now: Date;
  outcomes: (CompletionOutcome | undefined)[];
}

/** An item for the slow path, with its job's facts when the batch's read found them. */
interface Slow {
  i: number;
  known?: CompletionFacts;
}

/**
 * The slow path's items in turns that run side by side, each turn's items one after the other:
 * members of one batch whose counts live in the same stripe (batches.ts) share a turn, since their
 * transactions write that stripe and, run at once, all but one would conflict and start again
 * (0.37 aborted transactions per member in the bench's `--only dag` when every member ended
 * alone; now those that could not complete together). Any other item has a turn of its own.
 */
function inTurns(slow: Slow[], ids: (ObjectId | undefined)[]): Slow[][] {
  const turns = groupBy(slow, (item): string | number => {
    const batchId = item.known?.batchId;
    return batchId === undefined ? item.i : `${batchId}/${stripeOf(ids[item.i]!.toHexString())}`;
  });
  return [...turns.values()];
}

/**
 * The completion bulk write, sent once more when it failed on the way (a network error, a primary
 * stepping down). A bulk with `updateMany` statements is not a retryable write, so the driver does
 * not resend it by itself as it does a bulk of `updateOne`s. Sending it again is safe: every
 * statement is fenced on `running` under the item's token, so a job the first attempt completed
 * is not matched again, and {@link sortOut} finds it completed at this very `now`.
 */
async function bulkWriteOnceMore(jobs: Collection<JobDocument>, statements: AnyBulkWriteOperation<JobDocument>[]): ReturnType<typeof bulkWriteFenced> {
  try {
    return await bulkWriteFenced(jobs, statements);
  } catch (err) {
    if (!isTransientMongoError(err)) throw err;
    return bulkWriteFenced(jobs, statements);
  }
}

/**
 * After a bulk write that did not match every job: sets the outcome of the jobs it can tell from
 * one read, and returns those still running under their item's token (for the slow path).
 */
async function sortOut(
  jobs: Collection<JobDocument>,
  rest: number[],
  ids: (ObjectId | undefined)[],
  items: CompletionItem[],
  now: Date,
  outcomes: (CompletionOutcome | undefined)[],
): Promise<Slow[]> {
  const found = await jobs
    .find(
      { _id: { $in: rest.map((i) => ids[i]!) } },
      { projection: { status: 1, 'lease.token': 1, 'completedLease.token': 1, finishedAt: 1, heldFinishedAt: 1, ...FACTS_PROJECTION } },
    )
    .toArray();
  const byId = new Map(found.map((doc) => [doc._id.toHexString(), doc]));
  const slow: Slow[] = [];
  // Jobs whose completion one item already reported: it completed once, under one token.
  const reported = new Set<string>();
  for (const i of rest) {
    const id = ids[i]!.toHexString();
    const doc = byId.get(id);
    // Read while its lease holds: the facts the slow path needs stay true (see CompletionFacts).
    if (holdsLease(doc, items[i]!.lease)) slow.push({ i, known: factsOf(doc!) });
    else if (doc !== undefined && completedUnder(doc, items[i]!.lease, now) && !reported.has(id)) {
      reported.add(id);
      outcomes[i] = 'completed';
    } else outcomes[i] = 'lost';
  }
  return slow;
}

/**
 * Whether `lease` completed the job at `now`: the lease rule, read on the lease the completion kept
 * (`completedLease`), since a completed job holds none.
 */
function completedUnder(doc: Pick<JobDocument, 'status' | 'completedLease' | 'finishedAt' | 'heldFinishedAt'>, lease: LeaseRef, now: Date): boolean {
  const finished = doc.finishedAt ?? doc.heldFinishedAt;
  return doc.status === 'completed' && finished?.getTime() === now.getTime() && holdsLease({ status: 'running', lease: doc.completedLease }, lease);
}

/** One completion through the store's own `complete`, its refusal as an outcome. */
async function completeAlone(deps: CompleteManyDeps, item: CompletionItem, now: Date, known: CompletionFacts | undefined): Promise<CompletionOutcome> {
  try {
    await deps.completeOne(item, now, known);
    return 'completed';
  } catch (err) {
    if (LoomError.is(err, 'LEASE_LOST')) return 'lost';
    if (LoomError.is(err, 'CANCELLED')) return 'cancelled';
    return { error: err instanceof Error ? err : new Error(String(err)) };
  }
}
