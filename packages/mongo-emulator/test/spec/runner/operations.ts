/**
 * The unified format's operations, each mapped onto the Node driver's public API (the same
 * mapping the driver's own runner uses), plus the "testRunner" special operations.
 */
import {
  ChangeStream,
  Collection,
  Db,
  MongoClient,
  ReadConcern,
  ReadPreference,
  WriteConcern,
  type ClientSession,
  type Document,
  type TransactionOptions,
} from 'mongodb';
import { Entities, TestClient, type Doc } from './entities.js';
import { match, MatchError } from './match.js';
import { checkError } from './errors.js';

export interface Operation {
  name: string;
  object: string;
  arguments?: Doc;
  expectResult?: unknown;
  expectError?: Doc;
  ignoreResultAndError?: boolean;
  saveResultAsEntity?: string;
}

export interface RunContext {
  entities: Entities;
  /** The internal client (initial data, outcome, assertions on collections). */
  internal: MongoClient;
}

type OperationFn = (ctx: RunContext, target: unknown, args: Doc) => Promise<unknown>;

function collection(target: unknown): Collection<Document> {
  if (!(target instanceof Collection)) throw new Error('operation needs a collection entity');
  return target;
}

function database(target: unknown): Db {
  if (!(target instanceof Db)) throw new Error('operation needs a database entity');
  return target;
}

function session(target: unknown): ClientSession {
  const s = target as ClientSession;
  if (!s || typeof s.startTransaction !== 'function') throw new Error('operation needs a session entity');
  return s;
}

function returnDocument(args: Doc): Doc {
  const out = { ...args };
  if (typeof out.returnDocument === 'string') out.returnDocument = out.returnDocument.toLowerCase();
  return out;
}

function transactionOptions(args: Doc): TransactionOptions {
  const options: TransactionOptions = {};
  if (args.readConcern) options.readConcern = ReadConcern.fromOptions(args as never);
  if (args.writeConcern) options.writeConcern = WriteConcern.fromOptions(args as never);
  if (args.readPreference) options.readPreference = ReadPreference.fromOptions(args as never);
  if (typeof args.maxCommitTimeMS === 'number') options.maxCommitTimeMS = args.maxCommitTimeMS;
  return options;
}

async function listNames(ctx: RunContext, args: Doc): Promise<string[]> {
  const found = await ctx.internal.db(args.databaseName as string).listCollections({}, { nameOnly: true }).toArray();
  return found.map((c) => c.name as string);
}

async function indexNames(ctx: RunContext, args: Doc): Promise<string[]> {
  try {
    const indexes = await ctx.internal.db(args.databaseName as string).collection(args.collectionName as string).listIndexes().toArray();
    return indexes.map((i) => i.name as string);
  } catch (err) {
    if ((err as { code?: number }).code === 26) return [];
    throw err;
  }
}

function assert(condition: boolean, message: string): void {
  if (!condition) throw new MatchError('', message);
}

async function failPoint(ctx: RunContext, clientId: string, fp: Doc): Promise<unknown> {
  const client = ctx.entities.testClient(clientId).client;
  const reply = await client.db('admin').command(fp);
  ctx.entities.failPoints.push({ client: ctx.internal, name: fp.configureFailPoint as string });
  return reply;
}

export const operations: Record<string, OperationFn> = {
  // Collection operations
  aggregate: async (_ctx, target, { pipeline, ...opts }) => {
    if (!(target instanceof Db) && !(target instanceof Collection)) throw new Error('aggregate needs a database or collection');
    return (target as Collection).aggregate(pipeline as Document[], opts).toArray();
  },
  bulkWrite: async (_ctx, target, { requests, ...opts }) => collection(target).bulkWrite(requests as never, opts),
  countDocuments: async (_ctx, target, { filter, ...opts }) => collection(target).countDocuments(filter as Document, opts),
  count: async (_ctx, target, { filter, ...opts }) => collection(target).count(filter as Document, opts),
  createIndex: async (_ctx, target, { keys, ...opts }) => collection(target).createIndex(keys as Document, opts),
  dropIndex: async (_ctx, target, { name, ...opts }) => collection(target).dropIndex(name as string, opts),
  deleteMany: async (_ctx, target, { filter, ...opts }) => collection(target).deleteMany(filter as Document, opts),
  deleteOne: async (_ctx, target, { filter, ...opts }) => collection(target).deleteOne(filter as Document, opts),
  distinct: async (_ctx, target, { fieldName, filter, ...opts }) => collection(target).distinct(fieldName as string, filter as Document, opts),
  estimatedDocumentCount: async (_ctx, target, opts) => collection(target).estimatedDocumentCount(opts),
  find: async (_ctx, target, { filter, ...opts }) => collection(target).find(filter as Document, opts).toArray(),
  findOne: async (_ctx, target, { filter, ...opts }) => collection(target).findOne(filter as Document, opts),
  findOneAndDelete: async (_ctx, target, { filter, ...opts }) => collection(target).findOneAndDelete(filter as Document, opts),
  findOneAndReplace: async (_ctx, target, { filter, replacement, ...opts }) =>
    collection(target).findOneAndReplace(filter as Document, replacement as Document, returnDocument(opts)),
  findOneAndUpdate: async (_ctx, target, { filter, update, ...opts }) =>
    collection(target).findOneAndUpdate(filter as Document, update as Document, returnDocument(opts)),
  insertMany: async (_ctx, target, { documents, ...opts }) => collection(target).insertMany((documents as Doc[]).map((d) => ({ ...d })), opts),
  insertOne: async (_ctx, target, { document, ...opts }) => collection(target).insertOne({ ...(document as Doc) }, opts),
  replaceOne: async (_ctx, target, { filter, replacement, ...opts }) => collection(target).replaceOne(filter as Document, replacement as Document, opts),
  updateMany: async (_ctx, target, { filter, update, ...opts }) => collection(target).updateMany(filter as Document, update as Document, opts),
  updateOne: async (_ctx, target, { filter, update, ...opts }) => collection(target).updateOne(filter as Document, update as Document, opts),
  clientBulkWrite: async (_ctx, target, { models, ...opts }) => {
    if (!(target instanceof TestClient)) throw new Error('clientBulkWrite needs a client');
    const list = (models as Doc[]).map((m) => {
      const [name, model] = Object.entries(m)[0] as [string, Doc];
      return { name, ...model };
    });
    return target.client.bulkWrite(list as never, opts);
  },
  rename: async (_ctx, target, { to, ...opts }) => collection(target).rename(to as string, opts),
  createChangeStream: async (_ctx, target, { pipeline, ...opts }) => {
    const watchable = target instanceof TestClient ? target.client : target;
    if (!(watchable instanceof MongoClient || watchable instanceof Db || watchable instanceof Collection)) throw new Error('createChangeStream needs a client, database or collection');
    const stream = (watchable as Collection).watch((pipeline ?? []) as Document[], opts);
    // The format wants the aggregate sent now, without consuming an event (the driver's own runner does the same).
    await (stream as unknown as { cursor: { cursorInit(): Promise<void> } }).cursor.cursorInit();
    return stream;
  },
  iterateUntilDocumentOrError: async (_ctx, target) => {
    if (!(target instanceof ChangeStream)) throw new Error('iterateUntilDocumentOrError needs a change stream');
    return target.next();
  },
  iterateOnce: async (_ctx, target) => (target as ChangeStream).tryNext(),
  close: async (_ctx, target) => {
    if (target instanceof TestClient) return target.client.close();
    return (target as { close(): Promise<void> }).close();
  },

  // Database operations
  createCollection: async (_ctx, target, { collection: name, ...opts }) => {
    await database(target).createCollection(name as string, opts);
  },
  dropCollection: async (_ctx, target, { collection: name, ...opts }) => database(target).dropCollection(name as string, opts),
  runCommand: async (_ctx, target, { command, commandName: _name, ...opts }) => database(target).command(command as Document, opts),
  modifyCollection: async (_ctx, target, { collection: name, ...opts }) => database(target).command({ collMod: name, ...opts }),
  listCollections: async (_ctx, target, { filter, ...opts }) => database(target).listCollections(filter as Document, opts).toArray(),

  // Session operations
  startTransaction: async (_ctx, target, args) => session(target).startTransaction(transactionOptions(args)),
  commitTransaction: async (_ctx, target) => session(target).commitTransaction(),
  abortTransaction: async (_ctx, target) => session(target).abortTransaction(),
  endSession: async (_ctx, target) => session(target).endSession(),
  withTransaction: async (ctx, target, { callback, ...args }) => {
    await session(target).withTransaction(async () => {
      for (const op of callback as Operation[]) await runOperation(ctx, op, true);
    }, transactionOptions(args));
  },

  // Special test operations (object: testRunner)
  failPoint: async (ctx, _target, { client, failPoint: fp }) => failPoint(ctx, client as string, fp as Doc),
  targetedFailPoint: async (ctx, _target, { session: s, failPoint: fp }) => {
    assert(session(s).isPinned, 'targetedFailPoint needs a pinned session');
    const reply = await ctx.internal.db('admin').command(fp as Doc);
    ctx.entities.failPoints.push({ client: ctx.internal, name: (fp as Doc).configureFailPoint as string });
    return reply;
  },
  createEntities: async (ctx, _target, { entities }) => ctx.entities.create(entities as Doc[]),
  assertSessionPinned: async (_ctx, _t, { session: s }) => assert(session(s).isPinned, 'session should be pinned'),
  assertSessionUnpinned: async (_ctx, _t, { session: s }) => assert(!session(s).isPinned, 'session should be unpinned'),
  assertSessionTransactionState: async (_ctx, _t, { session: s, state }) => {
    const names: Record<string, string> = { none: 'NO_TRANSACTION', starting: 'STARTING_TRANSACTION', in_progress: 'TRANSACTION_IN_PROGRESS', committed: 'TRANSACTION_COMMITTED', aborted: 'TRANSACTION_ABORTED' };
    const actual = (session(s) as unknown as { transaction: { state: string } }).transaction.state;
    assert(actual === names[state as string], `session transaction state is ${actual}, expected ${String(state)}`);
  },
  assertCollectionExists: async (ctx, _t, args) => assert((await listNames(ctx, args)).includes(args.collectionName as string), `collection ${String(args.collectionName)} should exist`),
  assertCollectionNotExists: async (ctx, _t, args) => assert(!(await listNames(ctx, args)).includes(args.collectionName as string), `collection ${String(args.collectionName)} should not exist`),
  assertIndexExists: async (ctx, _t, args) => assert((await indexNames(ctx, args)).includes(args.indexName as string), `index ${String(args.indexName)} should exist`),
  assertIndexNotExists: async (ctx, _t, args) => assert(!(await indexNames(ctx, args)).includes(args.indexName as string), `index ${String(args.indexName)} should not exist`),
};

/** Resolves entity names in arguments (`session`) the way the format defines. */
function resolveArguments(ctx: RunContext, args: Doc | undefined): Doc {
  const out: Doc = { ...(args ?? {}) };
  if (typeof out.session === 'string') out.session = ctx.entities.session(out.session);
  return out;
}

/** Runs one operation and checks its result or error; `rethrow` propagates errors (withTransaction callbacks). */
export async function runOperation(ctx: RunContext, op: Operation, rethrow = false): Promise<void> {
  const fn = operations[op.name];
  if (!fn) throw new Error(`unsupported operation ${op.name}`);
  const target = op.object === 'testRunner' ? undefined : ctx.entities.get(op.object);
  const args = resolveArguments(ctx, op.arguments);
  let result: unknown;
  try {
    result = await fn(ctx, target, args);
  } catch (err) {
    if (err instanceof MatchError && op.object === 'testRunner') throw err;
    if (op.expectError) {
      checkError(err, op.expectError, ctx.entities);
      if (rethrow) throw err;
      return;
    }
    if (op.ignoreResultAndError && !(err instanceof MatchError)) {
      if (rethrow) throw err;
      return;
    }
    throw err;
  }
  if (op.ignoreResultAndError) return;
  if (op.expectError) throw new MatchError('', `${op.name} succeeded but was expected to fail with ${JSON.stringify(op.expectError)}`);
  if (op.expectResult !== undefined) matchResult(op.name, op.expectResult, result, ctx.entities);
  if (op.saveResultAsEntity) ctx.entities.set(op.saveResultAsEntity, result);
}

/** Operations returning an iterable of documents: each element is a root-level document. */
const ITERABLE = new Set(['find', 'aggregate', 'listCollections']);

function matchResult(name: string, expected: unknown, actual: unknown, entities: Entities): void {
  if (ITERABLE.has(name) && Array.isArray(expected) && Array.isArray(actual)) {
    if (expected.length !== actual.length) {
      throw new MatchError('', `expected ${expected.length} documents, got ${actual.length}: ${JSON.stringify(actual)}`);
    }
    expected.forEach((e, i) => match(e, actual[i], entities, true, `[${i}]`));
    return;
  }
  match(expected, actual, entities, true);
}
