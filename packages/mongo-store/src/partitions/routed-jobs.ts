import { MongoBulkWriteError, ObjectId, type AnyBulkWriteOperation, type Collection, type Document, type Filter, type UpdateFilter } from 'mongodb';
import type { JobDocument } from '../schema/documents.js';
import { routeFilter, routeName, routeOf, type Route } from './partitions.js';

/**
 * Targeting on a sharded jobs collection (shard key `{ queue, partition }`): views of the jobs
 * collection that put the shard key into the filters the rest of the store writes by `_id`, so
 * mongos sends each to the one shard holding the job instead of every shard.
 *
 * A job's route (queue, partition) never changes. The store learns it from what it stores and
 * reads (inserts, claims, reads by id) and keeps it for the jobs it recently saw, which covers the
 * hot path: every write of a run is about a job this store claimed, and a child stores its
 * parent's route (`parentQueue`, `parentPartition`), so waking the parent is targeted too. A
 * filter by an id whose route is not known (an operator's command by id in another process) goes
 * out as it is: correct, broadcast.
 */

/** Routes of recently seen jobs, by id; forgets its oldest half past a bound, in O(1). */
export class JobRoutes {
  private current = new Map<string, Route>();
  private previous = new Map<string, Route>();
  /** Per parent id, the routes of its children seen here (bounded like the routes). */
  private children = new Map<string, Route[]>();
  private previousChildren = new Map<string, Route[]>();

  constructor(private readonly bound = 200_000) {}

  /**
   * The routes of `parentId`'s children this store saw (inserted, claimed or read); undefined:
   * none seen. Not necessarily all of them (another process may have enqueued some elsewhere):
   * good for a lookup that may miss (`findActiveChild`), not for a write that must reach them all.
   */
  childRoutes(parentId: string): Route[] | undefined {
    return this.children.get(parentId) ?? this.previousChildren.get(parentId);
  }

  private learnChild(parentId: string, route: Route): void {
    const known = this.childRoutes(parentId) ?? [];
    if (known.some((r) => r.queue === route.queue && r.partition === route.partition)) return;
    if (this.children.size >= this.bound / 2) {
      this.previousChildren = this.children;
      this.children = new Map();
    }
    this.children.set(parentId, [...known, route]);
  }

  learn(id: ObjectId | string, route: Route): void {
    const key = typeof id === 'string' ? id : id.toHexString();
    if (this.current.size >= this.bound / 2) {
      this.previous = this.current;
      this.current = new Map();
    }
    this.current.set(key, route);
  }

  get(id: ObjectId | string): Route | undefined {
    const key = typeof id === 'string' ? id : id.toHexString();
    return this.current.get(key) ?? this.previous.get(key);
  }

  /** Learns the route of a stored job document and, from a child, its parent's. */
  learnDocument(doc: unknown): void {
    if (typeof doc !== 'object' || doc === null) return;
    const d = doc as Partial<JobDocument>;
    if (!(d._id instanceof ObjectId)) return;
    const route = routeOf(d);
    if (route) this.learn(d._id, route);
    if (route && typeof d.parentId === 'string') this.learnChild(d.parentId, route);
    if (typeof d.parentId === 'string' && typeof d.parentQueue === 'string')
      this.learn(d.parentId, { queue: d.parentQueue, partition: d.parentPartition ?? 0 });
  }
}

/** How a view scopes one filter: the filters to send instead (several when ids of several routes must be split). */
type Scope = (filter: Filter<JobDocument>) => Filter<JobDocument>[];

const FILTER_FIRST = new Set(['find', 'findOne', 'findOneAndUpdate', 'findOneAndDelete', 'findOneAndReplace', 'updateOne', 'deleteOne', 'replaceOne']);

/**
 * The jobs collection as the store uses it on a partitioned deployment: a new child gets its
 * parent's route, and a filter by `_id` carries the job's route.
 */
export function routedJobs(jobs: Collection<JobDocument>, routes: JobRoutes): Collection<JobDocument> {
  const prepare = (doc: JobDocument): JobDocument => {
    if (doc.parentId !== undefined && doc.parentQueue === undefined) {
      const parent = routes.get(doc.parentId);
      if (parent) {
        doc.parentQueue = parent.queue;
        if (parent.partition !== 0) doc.parentPartition = parent.partition;
      }
    }
    routes.learnDocument(doc);
    return doc;
  };
  return view(jobs, routes, (filter) => byIdRoutes(filter, routes), prepare);
}

/** The jobs collection seen from one partition: every filter is narrowed to it (a claim of that partition). */
export function partitionJobs(jobs: Collection<JobDocument>, routes: JobRoutes, route: Route): Collection<JobDocument> {
  const fields = routeFilter(route);
  return view(
    jobs,
    routes,
    (filter) => [{ ...filter, ...fields }],
    (doc) => doc,
  );
}

/** Splits a filter by `_id` (one id, or `$in` of ids) by the routes of its ids; others go as they are. */
function byIdRoutes(filter: Filter<JobDocument>, routes: JobRoutes): Filter<JobDocument>[] {
  if (typeof filter !== 'object' || filter === null || 'queue' in filter || !('_id' in filter)) return [filter];
  const id: unknown = filter._id;
  if (id instanceof ObjectId) {
    const route = routes.get(id);
    return [route ? { ...filter, ...routeFilter(route) } : filter];
  }
  const ids = isInOnly(id) ? id.$in : undefined;
  if (!ids || !ids.every((x): x is ObjectId => x instanceof ObjectId)) return [filter];
  const groups = new Map<string, { route?: Route; ids: ObjectId[] }>();
  for (const one of ids) {
    const route = routes.get(one);
    const name = route ? routeName(route) : '';
    const group = groups.get(name) ?? { route, ids: [] };
    group.ids.push(one);
    groups.set(name, group);
  }
  return [...groups.values()].map(({ route, ids: some }) => ({ ...filter, _id: { $in: some }, ...(route ? routeFilter(route) : {}) }));
}

function isInOnly(value: unknown): value is { $in: unknown[] } {
  return typeof value === 'object' && value !== null && Object.keys(value).length === 1 && Array.isArray((value as { $in?: unknown }).$in);
}

/**
 * `fn` over each filter: side by side, or one after another when the command runs in a session
 * (a transaction): commands sent at once in one transaction would each try to start it.
 */
async function eachRoute<T>(filters: Filter<JobDocument>[], options: unknown, fn: (f: Filter<JobDocument>) => Promise<T>): Promise<T[]> {
  const inSession = typeof options === 'object' && options !== null && 'session' in options && (options as { session?: unknown }).session !== undefined;
  if (!inSession) return Promise.all(filters.map(fn));
  const out: T[] = [];
  for (const f of filters) out.push(await fn(f));
  return out;
}

function view(jobs: Collection<JobDocument>, routes: JobRoutes, scope: Scope, prepare: (doc: JobDocument) => JobDocument): Collection<JobDocument> {
  const learn = <T>(doc: T): T => {
    routes.learnDocument(doc);
    return doc;
  };
  const methods: Record<string, (...args: any[]) => unknown> = {
    insertOne: (doc: JobDocument, ...rest: unknown[]) => jobs.insertOne(prepare(doc), ...(rest as [])),
    insertMany: (docs: JobDocument[], ...rest: unknown[]) => jobs.insertMany(docs.map(prepare), ...(rest as [])),
    find: (filter: Filter<JobDocument>, ...rest: unknown[]) => {
      const filters = scope(filter);
      if (filters.length === 1) {
        const cursor = jobs.find(filters[0]!, ...(rest as []));
        return wholeDocuments(rest) ? cursor.map(learn) : cursor;
      }
      // Ids of several routes: one targeted query each, read whole (the store reads such sets with toArray).
      const found = async () => (await eachRoute(filters, rest[0], (f) => jobs.find(f, ...(rest as [])).toArray())).flat();
      return { toArray: async () => (wholeDocuments(rest) ? (await found()).map(learn) : found()) };
    },
    countDocuments: async (filter: Filter<JobDocument>, ...rest: unknown[]) => {
      const counts = await eachRoute(scope(filter ?? {}), rest[0], (f) => jobs.countDocuments(f, ...(rest as [])));
      return counts.reduce((a, b) => a + b, 0);
    },
    updateMany: async (filter: Filter<JobDocument>, ...rest: unknown[]) => {
      const filters = scope(filter);
      const args = rest as [UpdateFilter<JobDocument>];
      if (filters.length === 1) return jobs.updateMany(filters[0]!, ...args);
      const results = await eachRoute(filters, rest[1], (f) => jobs.updateMany(f, ...args));
      return sumResults(results);
    },
    deleteMany: async (filter: Filter<JobDocument>, ...rest: unknown[]) => {
      const filters = scope(filter);
      if (filters.length === 1) return jobs.deleteMany(filters[0]!, ...(rest as []));
      const results = await eachRoute(filters, rest[0], (f) => jobs.deleteMany(f, ...(rest as [])));
      return { acknowledged: true, deletedCount: results.reduce((a, r) => a + r.deletedCount, 0) };
    },
    bulkWrite: (ops: AnyBulkWriteOperation<JobDocument>[], ...rest: unknown[]) => bulkWrite(jobs, ops, scope, prepare, rest),
  };
  return new Proxy(jobs, {
    get(target, prop, receiver) {
      if (typeof prop === 'string' && prop in methods) return methods[prop];
      if (typeof prop === 'string' && FILTER_FIRST.has(prop)) {
        return async (filter: Filter<JobDocument>, ...rest: unknown[]) => {
          const filters = scope(filter);
          // A single-document command keeps its filter when it would need several routes.
          const one = filters.length === 1 ? filters[0]! : filter;
          const method = (target as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[prop]!;
          const result: unknown = await method.call(target, one, ...rest);
          return prop.startsWith('find') && wholeDocuments(rest, prop) ? learn(result) : result;
        };
      }
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * Whether a read returns whole documents (no projection): only then does a document without
 * `partition` say partition 0, rather than a projection that left the field out.
 */
function wholeDocuments(rest: unknown[], method = 'find'): boolean {
  const options = rest[method === 'findOneAndUpdate' || method === 'findOneAndReplace' ? 1 : 0] as { projection?: unknown } | undefined;
  return options?.projection === undefined;
}

function sumResults(results: { matchedCount: number; modifiedCount: number; upsertedCount: number }[]): Document {
  return {
    acknowledged: true,
    matchedCount: results.reduce((a, r) => a + r.matchedCount, 0),
    modifiedCount: results.reduce((a, r) => a + r.modifiedCount, 0),
    upsertedCount: results.reduce((a, r) => a + r.upsertedCount, 0),
    upsertedId: null,
  };
}

/**
 * A bulk write whose statements are scoped (a statement by ids of several routes becomes one per
 * route, each reaching one shard); the server's write errors are given back the caller's indexes.
 */
async function bulkWrite(
  jobs: Collection<JobDocument>,
  ops: AnyBulkWriteOperation<JobDocument>[],
  scope: Scope,
  prepare: (doc: JobDocument) => JobDocument,
  rest: unknown[],
): Promise<unknown> {
  const statements: AnyBulkWriteOperation<JobDocument>[] = [];
  const origin: number[] = [];
  ops.forEach((op, index) => {
    for (const statement of scopeStatement(op, scope, prepare)) {
      statements.push(statement);
      origin.push(index);
    }
  });
  try {
    return await jobs.bulkWrite(statements, ...(rest as []));
  } catch (err) {
    if (err instanceof MongoBulkWriteError && statements.length !== ops.length) {
      for (const e of [err.writeErrors].flat()) {
        const inner = (e as unknown as { err?: { index: number } }).err;
        if (inner && typeof inner.index === 'number') inner.index = origin[inner.index] ?? inner.index;
      }
    }
    throw err;
  }
}

function scopeStatement(
  op: AnyBulkWriteOperation<JobDocument>,
  scope: Scope,
  prepare: (doc: JobDocument) => JobDocument,
): AnyBulkWriteOperation<JobDocument>[] {
  if ('insertOne' in op) return [{ insertOne: { document: prepare(op.insertOne.document as JobDocument) } }];
  if ('updateMany' in op) return scope(op.updateMany.filter).map((filter) => ({ updateMany: { ...op.updateMany, filter } }));
  if ('deleteMany' in op) return scope(op.deleteMany.filter).map((filter) => ({ deleteMany: { ...op.deleteMany, filter } }));
  if ('updateOne' in op) return [{ updateOne: { ...op.updateOne, filter: single(scope, op.updateOne.filter) } }];
  if ('deleteOne' in op) return [{ deleteOne: { ...op.deleteOne, filter: single(scope, op.deleteOne.filter) } }];
  if ('replaceOne' in op) return [{ replaceOne: { ...op.replaceOne, filter: single(scope, op.replaceOne.filter) } }];
  return [op];
}

function single(scope: Scope, filter: Filter<JobDocument>): Filter<JobDocument> {
  const filters = scope(filter);
  return filters.length === 1 ? filters[0]! : filter;
}
