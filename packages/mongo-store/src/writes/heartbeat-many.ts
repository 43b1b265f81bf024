import type { Collection, ObjectId } from 'mongodb';
import { holdsLease, LoomError, type HeartbeatItem, type HeartbeatOutcome, type LeaseExtension } from '@loom/core';
import { requireDate } from '../arguments.js';
import type { JobDocument } from '../schema/documents.js';
import type { FencedWrites } from './fenced-writes.js';
import { fencedFilter } from '../schema/filters.js';
import { bulkWriteFenced, leaseIdsOf } from './lease-batches.js';
import { extendLeaseUpdate } from '../schema/updates.js';
import { StoreArgumentError, StoreOperationError } from '../store-errors.js';

/** What {@link heartbeatMany} needs of the store besides the collection. */
export interface HeartbeatManyDeps {
  jobs: Collection<JobDocument>;
  fenced: FencedWrites;
  /** The store's own `extendLease` of one lease (one findAndModify, which also tells a requested cancel; its flow slots move with it). */
  extendOne: (item: HeartbeatItem, now: Date) => Promise<LeaseExtension>;
  /** The flow slots of leases the bulk write extended move with them. */
  extendSlots: (extended: HeartbeatItem[], now: Date) => Promise<void>;
  /** A lease found lost: its flow slots are no longer this store's to extend or free. */
  forget: (token: string) => void;
}

/**
 * Batched heartbeats: one unordered bulk `update` carrying, per lease, the statement of a lone
 * heartbeat — fenced by `_id` + lease token + `running` + a lease not yet run out at `now`, and
 * no cancel requested (a bulk write cannot tell which job had one). When every job matched — the
 * common case — that, plus one bulk write of the flow slots of leases that hold some, is all.
 * Otherwise one read tells which did not: a job whose lease now ends at the item's `until` was
 * extended by this call (a cancel requested since shows as `'cancel-requested'`); one still running
 * under the item's token with time left takes the store's own `extendLease` (its cancel was
 * requested: `'cancel-requested'`); anything else (taken over, finished, gone, run out) is `'lost'`.
 * A single item goes through `extendLease` directly (one findAndModify, as before batching).
 */
export async function heartbeatMany(deps: HeartbeatManyDeps, items: HeartbeatItem[], now: Date): Promise<HeartbeatOutcome[]> {
  const valid =
    Array.isArray(items) &&
    items.every((item) => typeof item?.lease === 'object' && item.lease !== null && item.until instanceof Date && !Number.isNaN(item.until.getTime()));
  if (!valid) throw new StoreArgumentError('heartbeatMany items must be an array of { lease, until: Date }');
  requireDate(now, 'now');
  const outcomes = new Array<HeartbeatOutcome | undefined>(items.length);
  const ids = leaseIdsOf(deps.fenced, items, outcomes);
  const pending = items.map((_, i) => i).filter((i) => ids[i] !== undefined);
  if (pending.length === 1) {
    const i = pending[0]!;
    try {
      outcomes[i] = await deps.extendOne(items[i]!, now);
    } catch (err) {
      if (!LoomError.is(err, 'LEASE_LOST')) throw err; // the call as a whole failed
      outcomes[i] = 'lost';
    }
  } else if (pending.length > 1) {
    await extendInBulk(deps, pending, ids, items, now, outcomes);
  }
  items.forEach((item, i) => {
    if (outcomes[i] === 'lost' && typeof item.lease.token === 'string') deps.forget(item.lease.token);
  });
  return outcomes as HeartbeatOutcome[];
}

async function extendInBulk(
  deps: HeartbeatManyDeps,
  pending: number[],
  ids: (ObjectId | undefined)[],
  items: HeartbeatItem[],
  now: Date,
  outcomes: (HeartbeatOutcome | undefined)[],
): Promise<void> {
  const refused = new Map<number, Error>();
  const statements = pending.map((i) => ({
    updateOne: {
      filter: fencedFilter('extendLease', ids[i]!, items[i]!.lease.token, { noCancelRequested: true, unexpiredAt: now }),
      update: extendLeaseUpdate(items[i]!.until, now),
    },
  }));
  const { matched, refused: refusedStatements } = await bulkWriteFenced(deps.jobs, statements);
  for (const { index, message, cause } of refusedStatements) {
    const i = pending[index]!;
    refused.set(i, new StoreOperationError(`extending the lease of job ${items[i]!.lease.jobId} failed: ${message}`, { cause }));
  }
  for (const [i, error] of refused) outcomes[i] = { error };
  const rest = pending.filter((i) => !refused.has(i));
  let slow: number[] = [];
  if (matched === rest.length) for (const i of rest) outcomes[i] = 'extended';
  else slow = await sortOut(deps.jobs, rest, ids, items, now, outcomes);
  await deps.extendSlots(
    rest.filter((i) => outcomes[i] === 'extended' || outcomes[i] === 'cancel-requested').map((i) => items[i]!),
    now,
  );
  await Promise.all(
    slow.map(async (i) => {
      try {
        outcomes[i] = await deps.extendOne(items[i]!, now);
      } catch (err) {
        outcomes[i] = LoomError.is(err, 'LEASE_LOST') ? 'lost' : { error: err instanceof Error ? err : new Error(String(err)) };
      }
    }),
  );
}

/**
 * After a bulk write that did not match every job: sets the outcome of the jobs one read can tell,
 * and returns those still running under their item's token with time left (for `extendLease`).
 */
async function sortOut(
  jobs: Collection<JobDocument>,
  rest: number[],
  ids: (ObjectId | undefined)[],
  items: HeartbeatItem[],
  now: Date,
  outcomes: (HeartbeatOutcome | undefined)[],
): Promise<number[]> {
  const found = await jobs
    .find({ _id: { $in: rest.map((i) => ids[i]!) } }, { projection: { status: 1, 'lease.token': 1, 'lease.until': 1, cancelRequestedAt: 1 } })
    .toArray();
  const byId = new Map(found.map((doc) => [doc._id.toHexString(), doc]));
  const slow: number[] = [];
  for (const i of rest) {
    const doc = byId.get(ids[i]!.toHexString());
    const until = doc?.lease?.until?.getTime();
    if (!holdsLease(doc, items[i]!.lease) || until === undefined) outcomes[i] = 'lost';
    else if (until === items[i]!.until.getTime()) outcomes[i] = doc!.cancelRequestedAt === undefined ? 'extended' : 'cancel-requested';
    else if (until < now.getTime()) outcomes[i] = 'lost';
    else slow.push(i);
  }
  return slow;
}
