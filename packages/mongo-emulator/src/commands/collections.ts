/** create, drop, dropDatabase, listCollections and listDatabases. */
import { calculateObjectSize } from 'bson';
import { MongoQuery as Query } from '../query/mingo-context.js';
import { CommandError, notImplemented } from '../errors.js';
import { IteratorSource, openCursor, DEFAULT_FIRST_BATCH } from '../cursors.js';
import { validateCollectionName } from '../storage/catalog.js';
import type { Doc } from '../values.js';
import type { CommandContext, CommandTable } from './context.js';
import { batchSizeOf, collectionName, optionalDoc } from './arguments.js';

const CREATE_UNSUPPORTED = ['capped', 'size', 'max', 'validator', 'validationLevel', 'validationAction', 'viewOn', 'pipeline', 'timeseries', 'clusteredIndex', 'changeStreamPreAndPostImages', 'expireAfterSeconds', 'collation', 'storageEngine', 'indexOptionDefaults', 'encryptedFields'];

function create(ctx: CommandContext): Doc {
  const name = validateCollectionName(ctx.db, collectionName(ctx));
  for (const option of CREATE_UNSUPPORTED) {
    const v = ctx.body[option];
    if (v !== undefined && v !== false) throw notImplemented(`option '${option}' of command 'create'`);
  }
  const { created } = ctx.engine.catalog.getOrCreate(ctx.db, name);
  if (!created) throw new CommandError('NamespaceExists', `Collection ${ctx.db}.${name} already exists.`);
  return { ok: 1 };
}

function drop(ctx: CommandContext): Doc {
  const name = collectionName(ctx);
  const coll = ctx.engine.catalog.get(ctx.db, name);
  if (!coll) throw new CommandError('NamespaceNotFound', 'ns not found');
  const nIndexesWas = coll.indexes.size;
  ctx.engine.catalog.drop(ctx.db, name);
  ctx.engine.changeLog.append({ db: ctx.db, coll: name, operationType: 'drop' });
  return { nIndexesWas, ns: `${ctx.db}.${name}`, ok: 1 };
}

function dropDatabase(ctx: CommandContext): Doc {
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
      : { name: c.name, type: 'collection', options: { ...c.options }, info: { readOnly: false }, idIndex: { v: 2, key: { _id: 1 }, name: '_id_' } },
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
  create: { run: create, fields: ['autoIndexId', 'idIndex', ...CREATE_UNSUPPORTED] },
  drop: { run: drop, fields: [] },
  dropDatabase: { run: dropDatabase, fields: [] },
  listCollections: { run: listCollections, fields: ['filter', 'nameOnly', 'authorizedCollections', 'cursor'] },
  listDatabases: { run: listDatabases, fields: ['filter', 'nameOnly', 'authorizedDatabases'], adminOnly: true },
};
