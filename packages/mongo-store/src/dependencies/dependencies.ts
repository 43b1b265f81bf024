import type { AnyBulkWriteOperation, ClientSession, Collection, Filter, ObjectId, UpdateFilter } from 'mongodb';
import {
  InvalidDependenciesError,
  LIFECYCLE,
  checkBatchDependencies,
  dependencyFailedError,
  dependencyFailedReason,
  dependencyIds,
  dependencyOutcome,
  type EnqueueResult,
  type JobStatus,
  type NewJob,
} from '@loom/core';
import { parseJobId, requireDate } from '../arguments.js';
import { inTransaction, withSession, type StoreCollections } from '../connection/collections.js';
import type { DeadLetterDocument, JobDocument } from '../schema/documents.js';
import { deadLetterDocument } from '../schema/updates.js';
import { DEAD_DEPENDENTS_OPEN_INDEX, DEPENDENTS_OPEN_INDEX } from '../schema/indexes.js';
import { StoreArgumentError } from '../store-errors.js';
import { releaseStatements } from '../writes/retention-holds.js';
import { groupBy } from '../group-by.js';
import type { Route } from '../partitions/partitions.js';

/**
 * Job dependencies on MongoDB. A job lists its dependencies (`dependsOn`) and the unmet ones
 * (`waitingFor.dependencies`); each dependency lists its dependents (`dependents`) and carries
 * `dependentsOpen` until a settle has applied its end to them. Settling reads the finished jobs and
 * writes each dependent by `_id`: O(edges), no scan (for completed dependencies, three commands
 * however many are settled together: one read, one bulk write of two statements per dependent, one
 * close). `dependentsOpen` is in a partial index, so the settle of what a crash left undone finds
 * exactly those jobs.
 *
 * An enqueue with dependencies is one transaction (a replica set is required): its read of the
 * dependencies' statuses and its write of their `dependents` conflict with a concurrent end of a
 * dependency, so the dependent never misses it.
 */

/** How a settle asks again when a dependency gained dependents while it was being settled. */
const MAX_SETTLE_ROUNDS = 5;
const DEFAULT_SETTLE_LIMIT = 100;

/** Rows' end statuses, from the table. */
const TO = {
  enqueueWaiting: LIFECYCLE.enqueueWaiting.to as JobStatus,
  dependenciesMet: LIFECYCLE.dependenciesMet.to as JobStatus,
  dependencyCancelled: LIFECYCLE.dependencyCancelled.to as JobStatus,
};

/**
 * The routes (queue, partition) of jobs on a partitioned deployment (routed-jobs.ts `JobRoutes`).
 * A dependency keeps its dependents' routes (`dependentRoutes`, by id) next to their ids, so the
 * process that settles it, which may never have seen them, writes each on its one shard.
 */
export interface DependentRoutes {
  get(id: string): Route | undefined;
  learn(id: string, route: Route): void;
}

export interface DependencyContext {
  collections: StoreCollections;
  routes?: DependentRoutes;
  replicated: boolean;
  /** The plain enqueue (dedup, tombstones) of the jobs, without their dependencies. */
  enqueue(jobs: NewJob[], session: ClientSession): Promise<EnqueueResult[]>;
}

/** Enqueues a batch with dependencies (see `JobStore.enqueue`): in `session`, or in a transaction of its own. */
export async function enqueueWithDependencies(ctx: DependencyContext, jobs: NewJob[], now: Date, session: ClientSession | undefined): Promise<EnqueueResult[]> {
  if (!ctx.replicated)
    throw new StoreArgumentError('MongoStore: jobs with dependencies (dependsOn) need a replica set (they are stored in a transaction); nothing was enqueued');
  if (jobs.some((job) => job.debounceKey !== undefined))
    throw new StoreArgumentError('MongoStore: a debounced job cannot have dependencies (nor be enqueued with jobs that have some); nothing was enqueued');
  checkBatchDependencies(jobs);
  const run = (s: ClientSession) => enqueueIn(ctx, jobs, now, s);
  return session ? run(session) : inTransaction(ctx.collections, run);
}

async function enqueueIn(ctx: DependencyContext, jobs: NewJob[], now: Date, session: ClientSession): Promise<EnqueueResult[]> {
  const { jobs: live, deadLetters } = ctx.collections;
  const external = new Map<string, ObjectId | null>();
  for (const job of jobs) {
    if (job.dependsOn !== undefined && !Array.isArray(job.dependsOn)) throw new InvalidDependenciesError('dependsOn must be an array of job ids');
    for (const id of job.dependsOn ?? []) {
      if (typeof id !== 'string') throw new InvalidDependenciesError(`dependsOn holds a ${typeof id}, not a job id`);
      external.set(id, parseJobId(id));
    }
  }
  const ids = [...external.values()].filter((id): id is ObjectId => id !== null);
  const found = new Set<string>();
  /** Dependencies already in the dead letters: their `dependents` are written there. */
  const dead = new Set<string>();
  if (ids.length > 0) {
    for (const doc of await live.find({ _id: { $in: ids } }, { projection: { _id: 1 }, session }).toArray()) found.add(doc._id.toHexString());
    for (const doc of await deadLetters.find({ _id: { $in: ids } }, { projection: { _id: 1 }, session }).toArray()) {
      found.add(doc._id.toHexString());
      dead.add(doc._id.toHexString());
    }
  }
  const unknown = [...external.keys()].filter((id) => !found.has(id));
  if (unknown.length > 0) throw new InvalidDependenciesError(`unknown job ids: ${unknown.join(', ')}`);

  const plain = jobs.map(({ dependsOn: _d, dependsOnBatch: _b, onDependencyFailure: _p, ...job }) => job);
  const results = await ctx.enqueue(plain, session);
  const batchIds = results.map((r) => r.id);
  const links: Link[] = [];
  for (const [i, job] of jobs.entries()) {
    const result = results[i]!;
    const deps = dependencyIds(job, batchIds);
    if (!result.deduplicated && deps.length > 0) links.push({ id: result.id, deps, job });
  }
  if (links.length > 0) await linkAll(ctx.collections, links, dead, now, session, ctx.routes);
  return results;
}

/** A new job and its dependencies (ids). */
interface Link {
  id: string;
  deps: string[];
  job: NewJob;
}

/**
 * Gives each new job its dependencies and adds it to theirs `dependents`, in three commands
 * whatever the number of jobs and edges (one read of the dependencies already completed, one bulk
 * write of the new jobs, one of their dependencies; and one more for dependencies in the dead
 * letters): a DAG of thousands of edges must fit in its transaction's time.
 */
async function linkAll(
  collections: StoreCollections,
  links: Link[],
  dead: Set<string>,
  now: Date,
  session: ClientSession,
  routes: DependentRoutes | undefined,
): Promise<void> {
  const { jobs, deadLetters } = collections;
  const all = [...new Set(links.flatMap((l) => l.deps))];
  const completed = new Set(
    (await jobs.find({ _id: { $in: all.map((d) => parseJobId(d)!) }, status: 'completed' }, { projection: { _id: 1 }, session }).toArray()).map((d) =>
      d._id.toHexString(),
    ),
  );
  const own: AnyBulkWriteOperation<JobDocument>[] = [];
  const dependentsOf = new Map<string, string[]>();
  for (const { id, deps, job } of links) {
    const unmet = deps.filter((d) => !completed.has(d));
    const set: Partial<JobDocument> = { dependsOn: deps, updatedAt: now };
    if (job.onDependencyFailure !== undefined) set.onDependencyFailure = job.onDependencyFailure;
    if (unmet.length > 0) {
      set.status = TO.enqueueWaiting;
      set.waitingFor = { dependencies: unmet };
    }
    own.push({ updateOne: { filter: { _id: parseJobId(id)! }, update: unmet.length > 0 ? { $set: set, $unset: { claimAt: '' } } : { $set: set } } });
    for (const d of deps) {
      const list = dependentsOf.get(d);
      if (list) list.push(id);
      else dependentsOf.set(d, [id]);
    }
  }
  await jobs.bulkWrite(own, { session });
  const inJobs: AnyBulkWriteOperation<JobDocument>[] = [];
  const inLetters: AnyBulkWriteOperation<DeadLetterDocument>[] = [];
  for (const [dep, dependents] of dependentsOf) {
    const _id = parseJobId(dep)!;
    /** The dependents' routes this store knows, as `$set` fields under `prefix`. */
    const routesUnder = (prefix: string): Record<string, unknown> => {
      const fields: Record<string, unknown> = {};
      for (const id of dependents) {
        const route = routes?.get(id);
        if (route) fields[`${prefix}dependentRoutes.${id}`] = route;
      }
      return fields;
    };
    if (dead.has(dep)) {
      const set = { 'job.dependentsOpen': true, ...routesUnder('job.') };
      inLetters.push({ updateOne: { filter: { _id }, update: { $push: { 'job.dependents': { $each: dependents } }, $set: set } } });
      continue;
    }
    // A dependency not completed yet is held from retention until its end is applied to these jobs
    // (a retention hold: see retention-holds.ts); a completed one has nothing left to tell them.
    const set = { ...(completed.has(dep) ? {} : { dependentsOpen: true }), ...routesUnder('') };
    const update = { $push: { dependents: { $each: dependents } }, ...(Object.keys(set).length > 0 ? { $set: set } : {}) } as UpdateFilter<JobDocument>;
    inJobs.push({ updateOne: { filter: { _id }, update } });
  }
  if (inJobs.length > 0) await jobs.bulkWrite(inJobs, { session });
  if (inLetters.length > 0) await deadLetters.bulkWrite(inLetters, { session });
}

/** A finished job as a settle reads it. */
interface Finished {
  id: ObjectId;
  status: JobStatus;
  dependents: string[];
  dependentRoutes?: Record<string, Route>;
  dead: boolean;
}

const FINISHED: JobStatus[] = ['completed', 'cancelled'];

/**
 * The jobs of `ids` that finished with their end not yet applied to their dependents
 * (`dependentsOpen`): one read of the jobs, and one of the dead letters for those not found there.
 */
async function readFinished(collections: StoreCollections, ids: ObjectId[]): Promise<Finished[]> {
  const finished: Finished[] = [];
  const seen = new Set<string>();
  const jobs = await collections.jobs
    .find({ _id: { $in: ids } }, { projection: { status: 1, dependents: 1, dependentsOpen: 1, dependentRoutes: 1 } })
    .toArray();
  for (const job of jobs) {
    seen.add(job._id.toHexString());
    if (FINISHED.includes(job.status) && job.dependentsOpen === true)
      finished.push({ id: job._id, status: job.status, dependents: job.dependents ?? [], dependentRoutes: job.dependentRoutes, dead: false });
  }
  const rest = ids.filter((id) => !seen.has(id.toHexString()));
  if (rest.length === 0) return finished;
  const letters = await collections.deadLetters
    .find({ _id: { $in: rest } }, { projection: { 'job.dependents': 1, 'job.dependentsOpen': 1, 'job.dependentRoutes': 1 } })
    .toArray();
  for (const letter of letters) {
    if (letter.job.dependentsOpen === true)
      finished.push({ id: letter._id, status: 'dead', dependents: letter.job.dependents ?? [], dependentRoutes: letter.job.dependentRoutes, dead: true });
  }
  return finished;
}

/** `settleDependents` (see `JobStore`). */
export async function settleDependents(
  collections: StoreCollections,
  req: { now: Date; jobIds?: string[]; limit?: number },
  routes?: DependentRoutes,
): Promise<number> {
  const now = requireDate(req?.now, 'settleDependents now');
  let work: ObjectId[];
  if (req.jobIds !== undefined) {
    if (!Array.isArray(req.jobIds)) throw new StoreArgumentError('settleDependents jobIds must be an array of job ids');
    work = req.jobIds.map((id) => parseJobId(id)).filter((id): id is ObjectId => id !== null);
  } else {
    const limit = req.limit ?? DEFAULT_SETTLE_LIMIT;
    const live = await collections.jobs
      .find({ dependentsOpen: true, status: { $in: FINISHED } } as Filter<JobDocument>, { projection: { _id: 1 }, limit, hint: DEPENDENTS_OPEN_INDEX })
      .toArray();
    const dead = await collections.deadLetters
      .find({ 'job.dependentsOpen': true } as Filter<DeadLetterDocument>, { projection: { _id: 1 }, limit, hint: DEAD_DEPENDENTS_OPEN_INDEX })
      .toArray();
    work = [...live, ...dead].map((d) => d._id);
  }
  let settled = 0;
  const rounds = new Map<string, number>();
  // In rounds: the jobs of a round are read together, their completed ones' dependents met in one
  // write, and they are closed together; the jobs a round ended (dependents of a dead or
  // cancelled job, under their policy) and those that gained dependents meanwhile make the next.
  while (work.length > 0) {
    const finished = await readFinished(collections, uniqueIds(work.splice(0)));
    if (routes) for (const job of finished) for (const [dependent, route] of Object.entries(job.dependentRoutes ?? {})) routes.learn(dependent, route);
    await meetAll(
      collections,
      finished.filter((job) => job.status === 'completed'),
      now,
    );
    for (const job of finished) {
      if (job.status === 'completed') continue;
      for (const dependent of job.dependents) {
        const ended = await settleOne(collections, job, dependent, now);
        if (ended) work.push(ended);
      }
    }
    const open = await closeAll(collections, finished);
    settled += finished.length - open.length;
    for (const job of open) {
      // It gained a dependent since the read (an enqueue committed meanwhile): read it again.
      const round = (rounds.get(job.id.toHexString()) ?? 0) + 1;
      rounds.set(job.id.toHexString(), round);
      if (round < MAX_SETTLE_ROUNDS) work.push(job.id);
    }
  }
  return settled;
}

/** `ids` without repeats (a job ended by a round may also have been asked for). */
function uniqueIds(ids: ObjectId[]): ObjectId[] {
  const seen = new Set<string>();
  return ids.filter((id) => !seen.has(id.toHexString()) && Boolean(seen.add(id.toHexString())));
}

/**
 * Closes the settled jobs (`dependentsOpen` goes, and with it their retention hold), each only if
 * no dependent was added since the read (its `dependents` has the length read). One write for the
 * jobs and one for the dead letters. Returns the jobs left open.
 */
async function closeAll(collections: StoreCollections, finished: Finished[]): Promise<Finished[]> {
  const sized = (job: Finished) => ({ $size: job.dependents.length });
  return [
    ...(await closeIn(
      collections.jobs,
      finished.filter((job) => !job.dead),
      (job) => releaseStatements({ _id: job.id, dependents: sized(job) }, 'dependentsOpen'),
      { dependentsOpen: true },
    )),
    ...(await closeIn(
      collections.deadLetters,
      finished.filter((job) => job.dead),
      (job) => [{ updateOne: { filter: { _id: job.id, 'job.dependents': sized(job) }, update: { $unset: { 'job.dependentsOpen': '' as const } } } }],
      { 'job.dependentsOpen': true },
    )),
  ];
}

/**
 * {@link closeAll} in one collection: the statements of every job in one ordered write, each job
 * matched by at most one of its statements; when fewer matched than jobs were sent, one read of
 * those still `open` tells which.
 */
async function closeIn<T extends { _id: ObjectId }>(
  collection: Collection<T>,
  jobs: Finished[],
  statementsOf: (job: Finished) => AnyBulkWriteOperation<T>[],
  open: Filter<T>,
): Promise<Finished[]> {
  if (jobs.length === 0) return [];
  const { matchedCount } = await collection.bulkWrite(jobs.flatMap(statementsOf), { ordered: true });
  if (matchedCount === jobs.length) return [];
  const ids = jobs.map((job) => job.id);
  const found = await collection.find({ _id: { $in: ids }, ...open } as Filter<T>, { projection: { _id: 1 } }).toArray();
  const still = new Set(found.map((doc) => (doc._id as ObjectId).toHexString()));
  return jobs.filter((job) => still.has(job.id.toHexString()));
}

/**
 * A completed dependency is met whatever a dependent's policy: each dependent still waiting for
 * some of the `completed` jobs drops them from its unmet list, and a list left empty makes it
 * queued. Two statements per dependent, in that order, for all of them in one ordered bulk write
 * (before, two round trips per edge, one after the other).
 */
async function meetAll(collections: StoreCollections, completed: Finished[], now: Date): Promise<void> {
  const edges = completed.flatMap((dep) => dep.dependents.map((dependent) => ({ dependent, depId: dep.id.toHexString() })));
  const statements: AnyBulkWriteOperation<JobDocument>[] = [];
  for (const [dependentId, met] of groupBy(edges, (edge) => edge.dependent)) {
    const _id = parseJobId(dependentId);
    const depIds = met.map((edge) => edge.depId);
    if (_id) statements.push(...meetStatements(_id, depIds, now));
  }
  if (statements.length > 0) await collections.jobs.bulkWrite(statements, { ordered: true });
}

/** The two writes that meet the dependencies `depIds` of the job `_id`, those it still waits for. */
function meetStatements(_id: ObjectId, depIds: string[], now: Date): AnyBulkWriteOperation<JobDocument>[] {
  return [
    {
      updateOne: {
        filter: { _id, status: 'waiting', 'waitingFor.dependencies': { $in: depIds } } as Filter<JobDocument>,
        update: { $pull: { 'waitingFor.dependencies': { $in: depIds } }, $set: { updatedAt: now } } as UpdateFilter<JobDocument>,
      },
    },
    {
      updateOne: {
        filter: { _id, status: 'waiting', 'waitingFor.dependencies': { $size: 0 } } as Filter<JobDocument>,
        update: { $set: { status: TO.dependenciesMet, runAt: now, claimAt: now, updatedAt: now }, $unset: { waitingFor: '' } },
      },
    },
  ];
}

/**
 * Applies the end of `dep`, dead or cancelled, to the job `dependentId` if it still waits for it;
 * returns its id when that ended it (its own dependents are next).
 */
async function settleOne(collections: StoreCollections, dep: Finished, dependentId: string, now: Date): Promise<ObjectId | null> {
  const { jobs } = collections;
  const _id = parseJobId(dependentId);
  if (!_id) return null;
  const depId = dep.id.toHexString();
  const waiting = { _id, status: 'waiting', 'waitingFor.dependencies': depId } as Filter<JobDocument>;
  // Dead or cancelled (the dependents of a completed one are met by meetAll): its policy decides.
  const job = await jobs.findOne(waiting, { projection: { onDependencyFailure: 1 } });
  if (!job) return null;
  const outcome = dependencyOutcome(dep.status, job.onDependencyFailure);
  if (outcome === 'met') {
    await jobs.bulkWrite(meetStatements(_id, [depId], now), { ordered: true });
    return null;
  }
  const reason = dependencyFailedReason(depId, dep.status);
  if (outcome === 'dependencyCancelled') {
    const res = await jobs.updateOne(waiting, {
      $set: { status: TO.dependencyCancelled, finishedAt: now, updatedAt: now, cancelReason: reason },
      $unset: { waitingFor: '', claimAt: '', debounceKey: '' },
    });
    return res.modifiedCount === 1 ? _id : null;
  }
  // dependencyFailed: the job moves to the dead letters, in one transaction.
  return inTransaction(collections, async (session) => {
    const doc = await jobs.findOne(waiting, withSession(session));
    if (!doc) return null;
    const { waitingFor: _w, ...rest } = doc;
    const error = dependencyFailedError(
      { id: dependentId, attempt: doc.attempt, ...(doc.priorAttempts === undefined ? {} : { priorAttempts: doc.priorAttempts }) },
      depId,
      dep.status,
      now,
    );
    await collections.deadLetters.replaceOne({ _id }, deadLetterDocument(rest as JobDocument, { reason, error, now }), { upsert: true, session });
    await jobs.deleteOne({ _id }, { session });
    return _id;
  });
}
