/** createIndexes, listIndexes and dropIndexes, with mongod's conflict codes (85/86). */
import { CommandError, notImplemented } from '../errors.js';
import { valueKey } from '../bson-order.js';
import { IteratorSource, openCursor, DEFAULT_FIRST_BATCH } from '../cursors.js';
import { parseIndexSpec, sameKey, sameOptions, type IndexSpec } from '../storage/index-spec.js';
import { validateCollectionName } from '../storage/catalog.js';
import { formatDoc, isPlainObject, type Doc } from '../values.js';
import type { CommandContext, CommandTable } from './context.js';
import type { CollectionData } from '../storage/collection.js';
import { preAndPostImagesOption } from './collections.js';
import { batchSizeOf, collectionName } from './arguments.js';

function createIndexes(ctx: CommandContext): Doc {
  const { engine, body } = ctx;
  const name = validateCollectionName(ctx.db, collectionName(ctx));
  const raw = body.indexes;
  if (!Array.isArray(raw) || raw.length === 0) throw new CommandError('BadValue', 'Must specify at least one index to create');
  const specs = raw.map((r) => {
    if (!isPlainObject(r)) throw new CommandError('TypeMismatch', "BSON field 'createIndexes.indexes' must contain objects");
    return parseIndexSpec(r);
  });
  const existingColl = engine.catalog.get(ctx.db, name);
  if (ctx.txn) return createIndexesInTransaction(ctx, name, specs, existingColl !== undefined);
  const before = existingColl?.indexes.size ?? 1;
  // Validate everything before creating anything, so a failed command changes nothing.
  const toCreate: IndexSpec[] = [];
  for (const spec of specs) {
    let identical = false;
    for (const existing of existingColl?.indexes.values() ?? []) {
      const other = existing.spec;
      if (other.name === spec.name) {
        if (!sameKey(other, spec)) {
          throw new CommandError(
            'IndexKeySpecsConflict',
            `An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: ${formatDoc(spec.description)}, existing index: ${formatDoc(other.description)}`,
          );
        }
        if (!sameOptions(other, spec)) {
          throw new CommandError(
            'IndexOptionsConflict',
            `An equivalent index already exists with the same name but different options. Requested index: ${formatDoc(spec.description)}, existing index: ${formatDoc(other.description)}`,
          );
        }
        identical = true;
      } else if (sameKey(other, spec) && valueKey(other.partialFilterExpression ?? null) === valueKey(spec.partialFilterExpression ?? null)) {
        // mongod allows one key pattern twice only with different partial filters.
        throw new CommandError('IndexOptionsConflict', `Index already exists with a different name: ${other.name}`);
      }
    }
    if (!identical && !toCreate.some((s) => s.name === spec.name)) toCreate.push(spec);
  }
  const { coll, created } = engine.catalog.getOrCreate(ctx.db, name);
  const added: string[] = [];
  try {
    for (const spec of toCreate) {
      coll.addIndex(spec);
      added.push(spec.name);
    }
  } catch (err) {
    for (const n of added) coll.indexes.delete(n);
    throw err;
  }
  if (created)
    engine.changeLog.append({
      db: ctx.db,
      coll: name,
      operationType: 'create',
      collectionUUID: coll.uuid,
      operationDescription: { idIndex: { v: 2, key: { _id: 1 }, name: '_id_' } },
    });
  if (toCreate.length > 0) {
    engine.changeLog.append({
      db: ctx.db,
      coll: name,
      operationType: 'createIndexes',
      collectionUUID: coll.uuid,
      operationDescription: { indexes: toCreate.map((spec) => ({ ...spec.description })) },
    });
  }
  const reply: Doc = { numIndexesBefore: before, numIndexesAfter: coll.indexes.size };
  if (created) reply.createdCollectionAutomatically = true;
  else reply.createdCollectionAutomatically = false;
  if (toCreate.length === 0) reply.note = 'all indexes already exist';
  reply.ok = 1;
  return reply;
}

/**
 * createIndexes inside a transaction (4.4+): only on a collection that does not exist yet or
 * that this transaction created; the indexes appear with the collection at commit.
 */
function createIndexesInTransaction(ctx: CommandContext, name: string, specs: IndexSpec[], exists: boolean): Doc {
  const txn = ctx.txn!;
  const ns = `${ctx.db}.${name}`;
  if (exists) {
    throw new CommandError('OperationNotSupportedInTransaction', `Cannot create new indexes on existing collection ${ns} in a multi-document transaction.`);
  }
  const pending = txn.created.get(ns) ?? { options: {}, indexes: [] };
  const before = pending.indexes.length + 1;
  for (const spec of specs) {
    const same = pending.indexes.find((s) => s.name === spec.name);
    if (same && !sameKey(same, spec))
      throw new CommandError('IndexKeySpecsConflict', `An existing index has the same name as the requested index: ${spec.name}`);
    if (!same) pending.indexes.push(spec);
  }
  const createdCollectionAutomatically = !txn.created.has(ns);
  txn.created.set(ns, pending);
  return { numIndexesBefore: before, numIndexesAfter: pending.indexes.length + 1, createdCollectionAutomatically, ok: 1 };
}

async function listIndexes(ctx: CommandContext): Promise<Doc> {
  const name = collectionName(ctx);
  const coll = ctx.engine.catalog.get(ctx.db, name);
  if (!coll) throw new CommandError('NamespaceNotFound', `ns does not exist: ${ctx.db}.${name}`);
  const docs = [...coll.indexes.values()].map((i) => ({ ...i.spec.description }));
  const batchSize = batchSizeOf((ctx.body.cursor ?? {}) as Doc, 'listIndexes.cursor') ?? DEFAULT_FIRST_BATCH;
  return openCursor(ctx.engine.cursors, `${ctx.db}.${name}`, new IteratorSource(docs[Symbol.iterator]()), batchSize, ctx.sessionKey);
}

function dropIndexes(ctx: CommandContext): Doc {
  const name = collectionName(ctx);
  const coll = ctx.engine.catalog.get(ctx.db, name);
  if (!coll) throw new CommandError('NamespaceNotFound', `ns not found ${ctx.db}.${name}`);
  const was = coll.indexes.size;
  const target = ctx.body.index;
  const names: string[] = [];
  if (target === '*') names.push(...[...coll.indexes.keys()].filter((n) => n !== '_id_'));
  else if (typeof target === 'string') names.push(target);
  else if (Array.isArray(target)) names.push(...target.map(String));
  else if (isPlainObject(target)) {
    const match = [...coll.indexes.values()].find((i) => formatDoc(i.spec.description.key as Doc) === formatDoc(target));
    if (!match) throw new CommandError('IndexNotFound', `can't find index with key: ${formatDoc(target)}`);
    names.push(match.spec.name);
  } else throw new CommandError('TypeMismatch', "BSON field 'dropIndexes.index' is missing but a required field");
  for (const n of names) {
    if (n === '_id_') throw new CommandError('InvalidOptions', 'cannot drop _id index');
    if (!coll.indexes.has(n)) throw new CommandError('IndexNotFound', `index not found with name [${n}]`);
  }
  const dropped = names.map((n) => ({ ...coll.indexes.get(n)!.spec.description }));
  for (const n of names) coll.indexes.delete(n);
  if (dropped.length > 0)
    ctx.engine.changeLog.append({
      db: ctx.db,
      coll: name,
      operationType: 'dropIndexes',
      collectionUUID: coll.uuid,
      operationDescription: { indexes: dropped },
    });
  return { nIndexesWas: was, ok: 1 };
}

/**
 * collMod: `index: { name | keyPattern, expireAfterSeconds?, hidden? }` changes an index in place
 * and `changeStreamPreAndPostImages` switches the images change streams can return, as mongod
 * does; every other collection option (validators, views, capped...) is refused by name.
 */
function collMod(ctx: CommandContext): Doc {
  const name = collectionName(ctx);
  const coll = ctx.engine.catalog.get(ctx.db, name);
  if (!coll) throw new CommandError('NamespaceNotFound', `ns does not exist: ${ctx.db}.${name}`);
  const reply = collModIndex(ctx, coll);
  const description: Doc = {};
  if (ctx.body.changeStreamPreAndPostImages !== undefined) {
    coll.options.changeStreamPreAndPostImages = preAndPostImagesOption(ctx.body.changeStreamPreAndPostImages, 'collMod');
    description.changeStreamPreAndPostImages = coll.options.changeStreamPreAndPostImages;
  }
  if (ctx.body.index !== undefined) description.index = ctx.body.index;
  ctx.engine.changeLog.append({ db: ctx.db, coll: name, operationType: 'modify', collectionUUID: coll.uuid, operationDescription: description });
  return { ...reply, ok: 1 };
}

function collModIndex(ctx: CommandContext, coll: CollectionData): Doc {
  const name = coll.name;
  const change = ctx.body.index;
  if (change === undefined) return {};
  if (!isPlainObject(change)) throw new CommandError('TypeMismatch', "BSON field 'collMod.index' is the wrong type, expected type 'object'");
  for (const key of Object.keys(change)) {
    if (!['name', 'keyPattern', 'expireAfterSeconds', 'hidden'].includes(key)) throw notImplemented(`collMod index option '${key}'`);
  }
  const table =
    typeof change.name === 'string'
      ? coll.indexes.get(change.name)
      : isPlainObject(change.keyPattern)
        ? [...coll.indexes.values()].find((i) => valueKey(i.spec.description.key) === valueKey(change.keyPattern))
        : undefined;
  if (!table) {
    throw new CommandError(
      'IndexNotFound',
      `cannot find index ${formatDoc(change.name !== undefined ? { name: change.name } : { keyPattern: change.keyPattern })} for ns ${ctx.db}.${name}`,
    );
  }
  const spec = table.spec;
  const reply: Doc = {};
  if (change.expireAfterSeconds !== undefined) {
    const ttl = change.expireAfterSeconds;
    if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl < 0) {
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- the server's message shows the value as sent
      throw new CommandError('InvalidOptions', `TTL index 'expireAfterSeconds' option must be a non-negative number: ${String(ttl)}`);
    }
    if (spec.expireAfterSeconds === undefined && (spec.fields.length !== 1 || spec.name === '_id_')) {
      throw new CommandError('InvalidOptions', 'TTL indexes are single-field indexes, compound indexes do not support TTL');
    }
    // Since 5.1 a single-field index may become a TTL index in place.
    if (spec.expireAfterSeconds !== undefined) reply.expireAfterSeconds_old = spec.expireAfterSeconds;
    reply.expireAfterSeconds_new = ttl;
    spec.expireAfterSeconds = ttl;
    spec.description.expireAfterSeconds = ttl;
  }
  if (change.hidden !== undefined) {
    if (spec.name === '_id_') throw new CommandError('BadValue', "can't hide _id index");
    reply.hidden_old = spec.description.hidden === true;
    reply.hidden_new = change.hidden === true;
    if (change.hidden === true) spec.description.hidden = true;
    else delete spec.description.hidden;
  }
  return reply;
}

/** collMod options mongod 7.0 has and the emulator refuses (NotImplemented) rather than ignore. */
const COLLMOD_UNSUPPORTED = [
  'validator',
  'validationLevel',
  'validationAction',
  'viewOn',
  'pipeline',
  'expireAfterSeconds',
  'timeseries',
  'cappedSize',
  'cappedMax',
  'dryRun',
  'prepareUnique',
  'unique',
  'recordIdsReplicated',
];

export const indexCommands: CommandTable = {
  collMod: {
    run: collMod,
    fields: ['index', 'changeStreamPreAndPostImages', ...COLLMOD_UNSUPPORTED],
    unsupported: COLLMOD_UNSUPPORTED,
  },
  createIndexes: { run: createIndexes, fields: ['indexes', 'commitQuorum'], inTransaction: true },
  listIndexes: { run: listIndexes, fields: ['cursor'] },
  dropIndexes: { run: dropIndexes, fields: ['index'] },
  deleteIndexes: { run: dropIndexes, fields: ['index'] },
};
