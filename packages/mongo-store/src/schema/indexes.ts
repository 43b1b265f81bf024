import type { Collection, Document, IndexDescription, IndexDescriptionInfo } from 'mongodb';
import { BSON, MongoServerError } from 'mongodb';
import type { ResolvedOptions, StoreLogger } from '../options.js';
import { indexConflict } from '../store-errors.js';

/** An index Loom needs, always created under this exact name. */
export interface IndexSpec {
  name: string;
  key: Record<string, 1 | -1>;
  unique?: boolean;
  partialFilterExpression?: Document;
  expireAfterSeconds?: number;
  /** Keys an earlier Loom gave this index: an index of this name with one of them is replaced. */
  formerKeys?: Record<string, 1 | -1>[];
}

/**
 * The index every claim is answered by. Claims hint it: on a tiny collection a planner may prefer
 * another index plus a sort, a choice it would then cache for the backlog that follows.
 */
export const CLAIM_INDEX = 'loom_claim';

/** The partial indexes of jobs (and dead letters) whose dependents are not settled yet (dependencies.ts). */
export const DEPENDENTS_OPEN_INDEX = 'loom_dependents_open';
export const DEAD_DEPENDENTS_OPEN_INDEX = 'loom_dead_dependents_open';
/**
 * Its key pattern (what `findOneAndUpdate`'s `hint` takes). A claim names its queues and names as
 * points, so the server walks one range per (queue, name) pair, each in claim order, and merges
 * them (SORT_MERGE): due jobs of a saturated or unknown name are never scanned nor fetched, however
 * many sort ahead. `claimAt` after `_id` (which is unique, so it changes no order) is checked in the
 * index: leased and delayed jobs are skipped without a fetch too.
 */
export const CLAIM_INDEX_KEY = { queue: 1, name: 1, priority: -1, runAt: 1, _id: 1, claimAt: 1 } as const;

/**
 * The claim index of Loom 0.1.0, without `name`: every due job of a name the claim did not take
 * was fetched and discarded on every claim. `init()` replaces it.
 */
export const FORMER_CLAIM_INDEX_KEYS: Record<string, 1 | -1>[] = [{ queue: 1, priority: -1, runAt: 1, _id: 1, claimAt: 1 }];

/**
 * The index claims of grouped (or per-key rate-limited) names use: within one queue and name, by
 * key, then in claim order. A claim finds the next key's best job with one range read, and the
 * keys it skips (at their limit) are left out of the range, never scanned. Partial: only jobs
 * with a key that can become claimable.
 */
export const FLOW_KEY_INDEX = 'loom_flow_key';

/** The unique index of debounce keys. */
export const DEBOUNCE_INDEX = 'loom_debounce';

/** The flow documents full until an instant, by name. */
export const FLOW_FULL_INDEX = 'loom_flow_full';

/** The TTL index of the workers collection (engines' presence rows): a row goes once its `expiresAt` has passed. */
export const WORKERS_EXPIRY_INDEX = 'loom_workers_expiry';

/** Indexes of the flow collection: the holds in force (`flowHolds`, read by every engine each poll). */
export const FLOW_HOLD_INDEX = 'loom_flow_holds';

/** The jobs collection's shard key (see partitions/): every command about one job, or one partition's claim, names both fields. */
export const JOBS_SHARD_KEY = { queue: 1, partition: 1 } as const;

/** The unique indexes of the jobs collection when it is sharded: prefixed by the shard key. */
export function shardedUniqueIndexes(): IndexSpec[] {
  return [
    {
      name: 'loom_idempotency_key',
      key: { ...JOBS_SHARD_KEY, idempotencyKey: 1 },
      unique: true,
      partialFilterExpression: { idempotencyKey: { $type: 'string' } },
    },
    { name: 'loom_debounce', key: { ...JOBS_SHARD_KEY, debounceKey: 1 }, unique: true, partialFilterExpression: { debounceKey: { $type: 'string' } } },
  ];
}

/** Indexes per collection, for the given options. Retention indexes appear only when enabled. */
export function indexPlan(
  options: Pick<ResolvedOptions, 'retentionSeconds'>,
  sharding: { jobsSharded: boolean } = { jobsSharded: false },
): { jobs: IndexSpec[]; deadLetters: IndexSpec[]; flow: IndexSpec[]; workers: IndexSpec[] } {
  let jobs: IndexSpec[] = [
    {
      // Every claim: points on queue and name, sort on priority/runAt/_id, claimAt checked in the
      // index. Partial: only jobs that can become claimable are in it, so finished jobs never slow claims.
      name: CLAIM_INDEX,
      key: { ...CLAIM_INDEX_KEY },
      partialFilterExpression: { claimAt: { $exists: true } },
      formerKeys: FORMER_CLAIM_INDEX_KEYS,
    },
    {
      name: IDEMPOTENCY_INDEX,
      key: { idempotencyKey: 1 },
      unique: true,
      partialFilterExpression: { idempotencyKey: { $type: 'string' } },
    },
    {
      // A parent's children (`listJobs({ parentId })`), and whether one is unfinished
      // (`findActiveChild`, answered from the index alone: it holds `_id`). Loom 0.1.0 keyed it on
      // parentId alone, so each finishing child of a fan-out fetched all its siblings.
      name: 'loom_parent',
      key: { parentId: 1, status: 1, _id: 1 },
      partialFilterExpression: { parentId: { $type: 'string' } },
      formerKeys: [{ parentId: 1 }],
    },
    // Pages of `listJobPage` (newest first, keyset on createdAt + _id) by status, name or queue, and
    // the per-queue counts of `stats` / `listQueues`: each answered by an index range, so a page
    // costs the same with a thousand jobs or a million.
    { name: JOB_LIST_INDEX.status, key: { status: 1, createdAt: -1, _id: -1 } },
    { name: JOB_LIST_INDEX.name, key: { name: 1, status: 1, createdAt: -1, _id: -1 }, formerKeys: [{ name: 1, status: 1, createdAt: -1 }] },
    { name: JOB_LIST_INDEX.queue, key: { queue: 1, status: 1, createdAt: -1, _id: -1 } },
    {
      // One queued, never-started job per debounce key: a debounced enqueue updates it; a claim or a
      // cancel takes the key off the job, so the next enqueue of that key makes a new job.
      name: DEBOUNCE_INDEX,
      key: { debounceKey: 1 },
      unique: true,
      partialFilterExpression: { debounceKey: { $type: 'string' } },
    },
    {
      name: FLOW_KEY_INDEX,
      key: { queue: 1, name: 1, flowKey: 1, priority: -1, runAt: 1, _id: 1, claimAt: 1 },
      partialFilterExpression: { claimAt: { $exists: true }, flowKey: { $exists: true } },
    },
    // Sleeping jobs per queue (`listQueues(now)`): only jobs that ever slept are in it.
    { name: SLEEPING_INDEX, key: { queue: 1, status: 1, sleepUntil: 1 }, partialFilterExpression: { sleepUntil: { $exists: true } } },
    // Completed jobs kept from retention (retention-holds.ts) keep their finish time here, out of
    // the TTL index: `countFinished` counts them on this index. Partial: only held jobs are in it.
    { name: HELD_FINISHED_INDEX, key: { heldFinishedAt: 1 }, partialFilterExpression: { heldFinishedAt: { $exists: true } } },
    // A batch's cancelled members (`batchFailures`). Partial: only batch members are in it.
    { name: BATCH_MEMBERS_INDEX, key: { batchId: 1, status: 1 }, partialFilterExpression: { batchId: { $exists: true } } },
    // Jobs whose end is not yet applied to their dependents (dependencies.ts): what a settle
    // without ids reads, and nothing else. Partial: a job without dependents is never in it.
    { name: DEPENDENTS_OPEN_INDEX, key: { dependentsOpen: 1, status: 1 }, partialFilterExpression: { dependentsOpen: { $exists: true } } },
  ];
  if (sharding.jobsSharded) {
    // A unique index on a sharded collection must start with the shard key: keys are unique per
    // queue, each key always in the partition its hash picks (see partitions.ts).
    const sharded = new Map(shardedUniqueIndexes().map((spec) => [spec.name, spec]));
    jobs = jobs.map((spec) => sharded.get(spec.name) ?? spec);
  }
  const deadLetters: IndexSpec[] = [
    // `listDeadLetters` (newest death first), unfiltered or by name or queue, and counts per queue.
    { name: DEAD_LETTER_INDEX.died, key: { diedAt: -1, _id: -1 } },
    { name: DEAD_LETTER_INDEX.nameDied, key: { name: 1, diedAt: -1, _id: -1 }, formerKeys: [{ name: 1, diedAt: -1 }] },
    { name: DEAD_LETTER_INDEX.queueDied, key: { queue: 1, diedAt: -1, _id: -1 } },
    // `listJobPage` over dead jobs, in the jobs' creation order.
    { name: DEAD_LETTER_INDEX.created, key: { 'job.createdAt': -1, _id: -1 } },
    { name: DEAD_LETTER_INDEX.nameCreated, key: { name: 1, 'job.createdAt': -1, _id: -1 } },
    { name: DEAD_LETTER_INDEX.queueCreated, key: { queue: 1, 'job.createdAt': -1, _id: -1 } },
    // `listJobPage({ idempotencyKey })` over dead jobs: a search by key is one lookup here too.
    { name: DEAD_LETTER_INDEX.key, key: { 'job.idempotencyKey': 1 }, partialFilterExpression: { 'job.idempotencyKey': { $type: 'string' } } },
    // Moves a crash may have interrupted (standalone only): what init() reconciles, and nothing else.
    { name: DEAD_LETTER_INDEX.pending, key: { pending: 1 }, partialFilterExpression: { pending: { $exists: true } } },
    // A batch's dead members (`batchFailures`). Partial: only batch members are in it.
    { name: DEAD_LETTER_INDEX.batch, key: { 'job.batchId': 1 }, partialFilterExpression: { 'job.batchId': { $exists: true } } },
    { name: DEAD_DEPENDENTS_OPEN_INDEX, key: { 'job.dependentsOpen': 1 }, partialFilterExpression: { 'job.dependentsOpen': { $exists: true } } },
  ];
  const { completed, dead } = options.retentionSeconds;
  if (completed !== false) {
    jobs.push({
      name: RETENTION_INDEX.jobs,
      key: { finishedAt: 1 },
      expireAfterSeconds: completed,
      partialFilterExpression: { status: 'completed' },
    });
  }
  if (dead !== false) deadLetters.push({ name: RETENTION_INDEX.deadLetters, key: { diedAt: 1 }, expireAfterSeconds: dead });
  const flow: IndexSpec[] = [
    { name: FLOW_HOLD_INDEX, key: { b: 1 }, partialFilterExpression: { b: { $exists: true } } },
    // The keys of a name that are full until later (`f`), which claims of keyed names leave out.
    { name: FLOW_FULL_INDEX, key: { '_id.n': 1, f: 1 }, partialFilterExpression: { f: { $exists: true } } },
  ];
  // Engines' presence rows go once their expiry has passed, even if nobody lists them.
  const workers: IndexSpec[] = [{ name: WORKERS_EXPIRY_INDEX, key: { expiresAt: 1 }, expireAfterSeconds: 0 }];
  return { jobs, deadLetters, flow, workers };
}

/** The jobs indexes of list pages and counts (queries hint them: a dropped one fails loudly instead of scanning). */
export const JOB_LIST_INDEX = { status: 'loom_list_status', name: 'loom_name_status', queue: 'loom_list_queue' } as const;

/** Jobs that slept, by queue, status and wake time: the `sleeping` count of `listQueues`. */
export const SLEEPING_INDEX = 'loom_sleeping';

/** The unique index of live jobs' idempotency keys (also what `listJobPage({ idempotencyKey })` reads). */
export const IDEMPOTENCY_INDEX = 'loom_idempotency_key';

/** The dead-letter indexes. */
export const DEAD_LETTER_INDEX = {
  died: 'loom_dead_died',
  nameDied: 'loom_dead_name',
  queueDied: 'loom_dead_queue_died',
  created: 'loom_dead_created',
  nameCreated: 'loom_dead_name_created',
  queueCreated: 'loom_dead_queue_created',
  key: 'loom_dead_key',
  pending: 'loom_dead_pending',
  batch: 'loom_dead_batch',
} as const;

/** The index of batch members by batch and status. */
export const BATCH_MEMBERS_INDEX = 'loom_batch_members';

/** Finish times of completed jobs a retention hold keeps out of the TTL index. */
export const HELD_FINISHED_INDEX = 'loom_held_finished';

/** Names of the TTL indexes, which Loom may retune or drop when retention changes. */
export const RETENTION_INDEX = { jobs: 'loom_retention_completed', deadLetters: 'loom_retention_dead' } as const;

const NAMESPACE_NOT_FOUND = 26;

async function listIndexes<T extends Document>(collection: Collection<T>): Promise<IndexDescriptionInfo[]> {
  try {
    // The driver types a listIndexes cursor's documents as `any`; these are its documented fields.
    return (await collection.listIndexes().toArray()) as IndexDescriptionInfo[];
  } catch (err) {
    if (err instanceof MongoServerError && err.code === NAMESPACE_NOT_FOUND) return [];
    throw err;
  }
}

function canonical(value: unknown): string {
  return value === undefined ? '' : BSON.EJSON.stringify(value as Document, { relaxed: false });
}

function sameKey(a: Document, b: Document): boolean {
  return canonical(Object.entries(a).map(([k, v]) => [k, Number(v)])) === canonical(Object.entries(b).map(([k, v]) => [k, Number(v)]));
}

/** What differs between an existing index and the spec; empty when they match. */
function differences(existing: IndexDescriptionInfo, spec: IndexSpec): string[] {
  const diffs: string[] = [];
  if (!sameKey(existing.key, spec.key)) diffs.push(`key ${canonical(existing.key)} instead of ${canonical(spec.key)}`);
  if (Boolean(existing.unique) !== Boolean(spec.unique)) diffs.push(`unique ${Boolean(existing.unique)} instead of ${Boolean(spec.unique)}`);
  if (canonical(existing.partialFilterExpression) !== canonical(spec.partialFilterExpression)) {
    diffs.push(
      `partialFilterExpression ${canonical(existing.partialFilterExpression) || 'none'} instead of ${canonical(spec.partialFilterExpression) || 'none'}`,
    );
  }
  if (existing.expireAfterSeconds !== spec.expireAfterSeconds) {
    diffs.push(`expireAfterSeconds ${existing.expireAfterSeconds ?? 'none'} instead of ${spec.expireAfterSeconds ?? 'none'}`);
  }
  return diffs;
}

function toDescription(spec: IndexSpec): IndexDescription {
  const { key, formerKeys: _former, ...rest } = spec;
  return { key, ...rest };
}

/** Whether `existing` is what an earlier Loom created under this spec's name (only its keys differ). */
function isFormerVersion(existing: IndexDescriptionInfo, spec: IndexSpec): boolean {
  if (!spec.formerKeys?.some((key) => sameKey(existing.key, key))) return false;
  return differences(existing, spec).every((d) => d.startsWith('key '));
}

const INDEX_NOT_FOUND = 27;

/** Drops an index; one already gone (another process replaced it first) is fine. */
async function dropIfPresent<T extends Document>(collection: Collection<T>, name: string): Promise<void> {
  try {
    await collection.dropIndex(name);
  } catch (err) {
    if (!(err instanceof MongoServerError && err.code === INDEX_NOT_FOUND)) throw err;
  }
}

/**
 * Creates the missing indexes of `specs` and verifies every one afterwards. Idempotent. An existing
 * index that has Loom's name but other options, or Loom's keys under another name, is a startup
 * error naming it, never a silent skip: a unique index that is not there means duplicate jobs.
 * Only retention changes are applied in place (`collMod` for a new TTL, drop when turned off).
 * When the first listing already shows every index as specified, nothing is written and that
 * listing is the verification (one command per collection on a database Loom has run on).
 */
export async function ensureIndexes<T extends Document>(
  collection: Collection<T>,
  specs: IndexSpec[],
  retentionIndex: string,
  logger?: StoreLogger,
): Promise<void> {
  const existing = await listIndexes(collection);
  const missing: IndexSpec[] = [];
  let changed = false;
  for (const spec of specs) {
    const sameName = existing.find((ix) => ix.name === spec.name);
    if (sameName && isFormerVersion(sameName, spec)) {
      logger?.warn(
        { collection: collection.collectionName, index: spec.name, from: sameName.key, to: spec.key },
        'replacing an index of an earlier Loom version; engines of that version fail their claims until they are upgraded',
      );
      await dropIfPresent(collection, spec.name);
      missing.push(spec);
      continue;
    }
    if (sameName) {
      const diffs = differences(sameName, spec);
      if (diffs.length === 0) continue;
      const onlyTtl = spec.name === retentionIndex && diffs.every((d) => d.startsWith('expireAfterSeconds'));
      if (onlyTtl && sameName.expireAfterSeconds !== undefined) {
        await collection.db.command({ collMod: collection.collectionName, index: { name: spec.name, expireAfterSeconds: spec.expireAfterSeconds } });
        changed = true;
        continue;
      }
      throw indexConflict(collection.collectionName, spec.name, `exists with ${diffs.join(', ')}`);
    }
    const sameKeys = existing.find((ix) => ix.name !== spec.name && sameKey(ix.key, spec.key));
    if (sameKeys) {
      throw indexConflict(collection.collectionName, String(sameKeys.name), `has the keys of Loom's index "${spec.name}" under another name`);
    }
    missing.push(spec);
  }
  if (!specs.some((s) => s.name === retentionIndex) && existing.some((ix) => ix.name === retentionIndex)) {
    // Retention was turned off: keep finished work forever, as configured.
    await collection.dropIndex(retentionIndex);
    changed = true;
  }
  if (missing.length > 0) await collection.createIndexes(missing.map(toDescription));
  if (changed || missing.length > 0) await verifyIndexes(collection, specs);
}

/** Throws naming the first index of `specs` that is absent or differs. */
export async function verifyIndexes<T extends Document>(collection: Collection<T>, specs: IndexSpec[]): Promise<void> {
  const existing = await listIndexes(collection);
  for (const spec of specs) {
    const found = existing.find((ix) => ix.name === spec.name);
    if (!found) throw indexConflict(collection.collectionName, spec.name, 'is missing after creating it (the server did not keep it)');
    const diffs = differences(found, spec);
    if (diffs.length > 0) throw indexConflict(collection.collectionName, spec.name, `was created with ${diffs.join(', ')}`);
  }
}
