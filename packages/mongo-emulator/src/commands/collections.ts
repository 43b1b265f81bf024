/** create, drop, renameCollection, dropDatabase, listCollections and listDatabases. */
import { calculateObjectSize } from 'bson';
import { MongoQuery as Query } from '../query/mingo-context.js';
import { CommandError, notImplemented } from '../errors.js';
import { IteratorSource, openCursor, DEFAULT_FIRST_BATCH } from '../cursors.js';
import { validateCollectionName } from '../storage/catalog.js';
import { isPlainObject, type Doc } from '../values.js';
import type { CommandContext, CommandTable } from './context.js';
import { batchSizeOf, collectionName, optionalDoc } from './arguments.js';

const CREATE_UNSUPPORTED = [
  'capped',
  'size',
  'max',
  'validator',
  'validationLevel',
  'validationAction',
  'viewOn',
  'pipeline',
  'timeseries',
  'clusteredIndex',
  'expireAfterSeconds',
  'collation',
  'storageEngine',
  'indexOptionDefaults',
  'encryptedFields',
];

/** `changeStreamPreAndPostImages: { enabled: <bool> }`, checked as mongod checks it. */
export function preAndPostImagesOption(value: unknown, command: string): Doc {
  if (!isPlainObject(value) || typeof value.enabled !== 'boolean' || Object.keys(value).length !== 1) {
    throw new CommandError('TypeMismatch', `BSON field '${command}.changeStreamPreAndPostImages' must be { enabled: <bool> }`);
  }
  return { enabled: value.enabled };
}

function create(ctx: CommandContext): Doc {
  const name = validateCollectionName(ctx.db, collectionName(ctx));
  for (const option of CREATE_UNSUPPORTED) {
    const v = ctx.body[option];
    if (v !== undefined && v !== false) throw notImplemented(`option '${option}' of command 'create'`);
  }
  const options: Doc = {};
  if (ctx.body.changeStreamPreAndPostImages !== undefined)
    options.changeStreamPreAndPostImages = preAndPostImagesOption(ctx.body.changeStreamPreAndPostImages, 'create');
  const ns = `${ctx.db}.${name}`;
  const exists = () => new CommandError('NamespaceExists', `Collection ${ns} already exists.`);
  if (ctx.txn) {
    // Inside a transaction the collection appears when the transaction commits.
    if (ctx.engine.catalog.get(ctx.db, name) || ctx.txn.created.has(ns)) throw exists();
    ctx.txn.created.set(ns, { options, indexes: [] });
    return { ok: 1 };
  }
  const { coll, created } = ctx.engine.catalog.getOrCreate(ctx.db, name, options);
  if (!created) throw exists();
  ctx.engine.changeLog.append({
    db: ctx.db,
    coll: name,
    operationType: 'create',
    collectionUUID: coll.uuid,
    operationDescription: { idIndex: { v: 2, key: { _id: 1 }, name: '_id_' } },
  });
  return { ok: 1 };
}

/**
 * Dropping a collection that does not exist succeeds, as it does since MongoDB 7.0. A drop
 * takes the collection's exclusive lock, so it first waits for every open transaction that used
 * the collection to commit or abort (failing with MaxTimeMSExpired once its maxTimeMS has
 * passed): "new DDL operations that affect the same database(s) or collection(s) wait behind the
 * transaction" (MongoDB manual, Production Considerations: DDL Operations). The transaction's
 * writes are then in the collection the drop removes.
 */
async function drop(ctx: CommandContext): Promise<Doc> {
  const name = collectionName(ctx);
  await ctx.engine.sessions.waitForHolders(`${ctx.db}.${name}`, ctx.wait);
  const coll = ctx.engine.catalog.get(ctx.db, name);
  if (!coll) return { ok: 1 };
  const nIndexesWas = coll.indexes.size;
  ctx.engine.catalog.drop(ctx.db, name);
  ctx.engine.changeLog.append({ db: ctx.db, coll: name, operationType: 'drop', collectionUUID: coll.uuid });
  return { nIndexesWas, ns: `${ctx.db}.${name}`, ok: 1 };
}

function splitNamespace(value: unknown, field: string): [string, string] {
  const dot = typeof value === 'string' ? value.indexOf('.') : -1;
  if (typeof value !== 'string' || dot <= 0 || dot === value.length - 1) {
    throw new CommandError('InvalidNamespace', `Invalid ${field} namespace: ${String(value)}`);
  }
  return [value.slice(0, dot), value.slice(dot + 1)];
}

/**
 * renameCollection (admin): moves documents and indexes to the new name; with dropTarget an
 * existing target is dropped first. Change streams see a `rename` event (then `invalidate` on
 * a stream watching the old collection).
 */
async function renameCollection(ctx: CommandContext): Promise<Doc> {
  const { catalog, changeLog } = ctx.engine;
  const [fromDb, from] = splitNamespace(ctx.body.renameCollection, 'source');
  const [toDb, to] = splitNamespace(ctx.body.to, 'target');
  validateCollectionName(toDb, to);
  // Exclusive locks on both namespaces, as a drop takes (see drop).
  await ctx.engine.sessions.waitForHolders(`${fromDb}.${from}`, ctx.wait);
  await ctx.engine.sessions.waitForHolders(`${toDb}.${to}`, ctx.wait);
  if (fromDb === toDb && from === to) throw new CommandError('IllegalOperation', "Can't rename a collection to itself");
  const source = catalog.get(fromDb, from);
  if (!source) throw new CommandError('NamespaceNotFound', `Source collection ${fromDb}.${from} does not exist`);
  const target = catalog.get(toDb, to);
  let droppedTarget: unknown;
  if (target) {
    if (ctx.body.dropTarget !== true) throw new CommandError('NamespaceExists', 'target namespace exists');
    catalog.drop(toDb, to);
    droppedTarget = target.uuid;
    changeLog.append({ db: toDb, coll: to, operationType: 'drop', collectionUUID: target.uuid });
  }
  catalog.rename(fromDb, from, toDb, to);
  const operationDescription: Doc = { to: { db: toDb, coll: to } };
  if (droppedTarget !== undefined) operationDescription.dropTarget = droppedTarget;
  changeLog.append({ db: fromDb, coll: from, operationType: 'rename', to: { db: toDb, coll: to }, collectionUUID: source.uuid, operationDescription });
  return { ok: 1 };
}

/** Waits, as drop does, for open transactions that used any collection of the database. */
async function dropDatabase(ctx: CommandContext): Promise<Doc> {
  await ctx.engine.sessions.waitForHolders(`${ctx.db}.`, ctx.wait);
  for (const name of ctx.engine.catalog.dropDatabase(ctx.db)) {
    ctx.engine.changeLog.append({ db: ctx.db, coll: name, operationType: 'drop' });
  }
  ctx.engine.changeLog.append({ db: ctx.db, coll: '', operationType: 'dropDatabase' });
  return { dropped: ctx.db, ok: 1 };
}

async function listCollections(ctx: CommandContext): Promise<Doc> {
  const filter = optionalDoc(ctx.body, 'listCollections', 'filter');
  const nameOnly = ctx.body.nameOnly === true;
  let docs: Doc[] = ctx.engine.catalog.collections(ctx.db).map((c) =>
    nameOnly
      ? { name: c.name, type: 'collection' }
      : {
          name: c.name,
          type: 'collection',
          options: { ...c.options },
          info: { readOnly: false, uuid: c.uuid },
          idIndex: { v: 2, key: { _id: 1 }, name: '_id_' },
        },
  );
  if (filter && Object.keys(filter).length > 0) {
    const q = new Query(filter);
    docs = docs.filter((d) => q.test(d));
  }
  const batchSize = batchSizeOf((ctx.body.cursor ?? {}) as Doc, 'listCollections.cursor') ?? DEFAULT_FIRST_BATCH;
  return openCursor(ctx.engine.cursors, `${ctx.db}.$cmd.listCollections`, new IteratorSource(docs[Symbol.iterator]()), batchSize, ctx.sessionKey);
}

function listDatabases(ctx: CommandContext): Doc {
  const filter = optionalDoc(ctx.body, 'listDatabases', 'filter');
  let databases: Doc[] = ctx.engine.catalog.databases().map((name) => {
    const colls = ctx.engine.catalog.collections(name);
    let size = 0;
    for (const c of colls) for (const r of c.records.values()) size += calculateObjectSize(r.doc);
    return { name, sizeOnDisk: size, empty: colls.every((c) => c.size === 0) };
  });
  if (filter && Object.keys(filter).length > 0) {
    const q = new Query(filter);
    databases = databases.filter((d) => q.test(d));
  }
  if (ctx.body.nameOnly === true) return { databases: databases.map((d) => ({ name: d.name })), ok: 1 };
  const totalSize = databases.reduce((s, d) => s + (d.sizeOnDisk as number), 0);
  return { databases, totalSize, totalSizeMb: Math.floor(totalSize / 1024 / 1024), ok: 1 };
}

export const collectionCommands: CommandTable = {
  create: { run: create, fields: ['autoIndexId', 'idIndex', 'changeStreamPreAndPostImages', ...CREATE_UNSUPPORTED], inTransaction: true },
  drop: { run: drop, fields: [] },
  renameCollection: { run: renameCollection, fields: ['to', 'dropTarget', 'stayTemp'], adminOnly: true },
  dropDatabase: { run: dropDatabase, fields: [] },
  listCollections: { run: listCollections, fields: ['filter', 'nameOnly', 'authorizedCollections', 'cursor'] },
  listDatabases: { run: listDatabases, fields: ['filter', 'nameOnly', 'authorizedDatabases'], adminOnly: true },
};
