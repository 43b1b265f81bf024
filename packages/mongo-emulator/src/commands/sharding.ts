/**
 * The admin commands of a simulated sharded cluster (`MongoEmulator.start({ shards: N })`):
 * enableSharding, shardCollection, listShards, split, moveChunk, as mongos answers them, and
 * `loomShardStats`, the emulator's own command (not MongoDB's) reading the routing counts.
 * Without `shards` they are unknown commands (59), as on a replica set.
 */
import { CommandError, notImplemented } from '../errors.js';
import { defaultIndexName, parseIndexSpec } from '../storage/index-spec.js';
import { validateCollectionName } from '../storage/catalog.js';
import { formatDoc, isPlainObject, type Doc } from '../values.js';
import { ShardKey, type KeyTuple } from '../sharding/shard-key.js';
import type { ShardedCluster, ShardedCollection } from '../sharding/cluster.js';
import type { CommandContext, CommandTable } from './context.js';

function clusterOf(ctx: CommandContext): ShardedCluster {
  const cluster = ctx.engine.sharding?.cluster;
  if (!cluster) throw new CommandError('CommandNotFound', `no such command: '${ctx.name}'`);
  return cluster;
}

function namespace(ctx: CommandContext): [string, string] {
  const ns = ctx.body[ctx.name];
  const dot = typeof ns === 'string' ? ns.indexOf('.') : -1;
  if (typeof ns !== 'string' || dot <= 0) throw new CommandError('InvalidNamespace', `Invalid namespace specified '${String(ns)}'`);
  const db = ns.slice(0, dot);
  return [db, validateCollectionName(db, ns.slice(dot + 1))];
}

function enableSharding(ctx: CommandContext): Doc {
  const cluster = clusterOf(ctx);
  const db = ctx.body.enableSharding;
  if (typeof db !== 'string' || db === '' || db.includes('.')) throw new CommandError('InvalidNamespace', `invalid db name specified: ${String(db)}`);
  if (db === 'admin' || db === 'local' || db === 'config') throw new CommandError('IllegalOperation', `Enabling sharding on the ${db} database is not allowed`);
  const primary = ctx.body.primaryShard;
  if (primary !== undefined && typeof primary !== 'string')
    throw new CommandError('TypeMismatch', "BSON field 'enableSharding.primaryShard' is the wrong type, expected type 'string'");
  cluster.enableSharding(db, primary);
  return { ok: 1 };
}

/**
 * shardCollection as mongos runs it: hashed keys cannot be unique; an existing unique index must
 * start with the key; a non-empty collection needs an index starting with the key; an empty or
 * missing one gets it (except a hashed one: the emulator has no hashed indexes, so none is made).
 */
function shardCollection(ctx: CommandContext): Doc {
  const cluster = clusterOf(ctx);
  const [db, name] = namespace(ctx);
  const ns = `${db}.${name}`;
  const key = ShardKey.parse(ctx.body.key);
  const unique = ctx.body.unique === true;
  if (key.isHashed && unique) {
    throw new CommandError(
      'InvalidOptions',
      "Hashed shard keys cannot be declared unique. It's possible to ensure uniqueness on the hashed field by declaring an additional (non-hashed) unique index on the field.",
    );
  }
  if (ctx.body.presplitHashedZones === true) throw notImplemented("option 'presplitHashedZones' of command 'shardCollection' (zones are not simulated)");
  const collation = ctx.body.collation;
  if (collation !== undefined && !(isPlainObject(collation) && collation.locale === 'simple'))
    throw notImplemented("option 'collation' of command 'shardCollection' other than { locale: 'simple' }");
  const numInitialChunks = ctx.body.numInitialChunks;
  if (
    numInitialChunks !== undefined &&
    (typeof numInitialChunks !== 'number' || !Number.isInteger(numInitialChunks) || numInitialChunks < 0 || numInitialChunks > 8192)
  ) {
    throw new CommandError('InvalidOptions', 'numInitialChunks cannot be more than either: 8192, 8192 * number of shards; or 1000000');
  }
  const existing = cluster.get(ns);
  if (existing) {
    if (formatDoc(existing.key.pattern) === formatDoc(key.pattern) && existing.unique === unique)
      return { collectionsharded: ns, collectionUUID: existing.uuid, ok: 1 };
    throw new CommandError(
      'AlreadyInitialized',
      `sharding already enabled for collection ${ns} with options { key: ${formatDoc(existing.key.pattern)}, unique: ${String(existing.unique)} }`,
    );
  }
  const current = ctx.engine.catalog.get(db, name);
  const indexes = [...(current?.indexes.values() ?? [])].map((i) => i.spec);
  for (const spec of indexes) {
    if (spec.unique && !key.allowsUniqueIndex(spec.description.key as Doc)) {
      throw new CommandError(
        'InvalidOptions',
        `can't shard collection '${ns}' with unique index on ${formatDoc(spec.description.key as Doc)} and proposed shard key ${formatDoc(key.pattern)}. Uniqueness can't be maintained unless shard key is a prefix`,
      );
    }
  }
  const supported = key.isHashed || indexes.some((spec) => key.supportedBy(spec.description.key as Doc) && !spec.partialFilterExpression && !spec.sparse);
  if (current && current.size > 0 && !supported) {
    throw new CommandError('InvalidOptions', 'Please create an index that starts with the proposed shard key before sharding the collection');
  }
  const { coll, created } = ctx.engine.catalog.getOrCreate(db, name);
  if (created)
    ctx.engine.changeLog.append({
      db,
      coll: name,
      operationType: 'create',
      collectionUUID: coll.uuid,
      operationDescription: { idIndex: { v: 2, key: { _id: 1 }, name: '_id_' } },
    });
  if (!supported) {
    const spec = parseIndexSpec({ key: key.pattern, name: defaultIndexName(key.pattern), ...(unique ? { unique: true } : {}) });
    coll.addIndex(spec);
    ctx.engine.changeLog.append({
      db,
      coll: name,
      operationType: 'createIndexes',
      collectionUUID: coll.uuid,
      operationDescription: { indexes: [{ ...spec.description }] },
    });
  }
  const sharded = cluster.shard(ns, key, unique, coll.uuid, numInitialChunks);
  return { collectionsharded: ns, collectionUUID: sharded.uuid, ok: 1 };
}

function listShards(ctx: CommandContext): Doc {
  const cluster = clusterOf(ctx);
  const shards = cluster.configCatalog().get('config', 'shards');
  return { shards: [...(shards?.records.values() ?? [])].map((r) => r.doc), ok: 1 };
}

function shardedCollection(ctx: CommandContext): ShardedCollection {
  const [db, name] = namespace(ctx);
  const coll = clusterOf(ctx).get(`${db}.${name}`);
  if (!coll) throw new CommandError('NamespaceNotSharded', `Can't execute ${ctx.name} on unsharded collection ${db}.${name}`);
  return coll;
}

/** A chunk bound given as a document of the shard key's fields, as it is (key-space values). */
function bound(coll: ShardedCollection, raw: unknown, field: string): KeyTuple {
  if (!isPlainObject(raw) || !coll.key.fields.every((f) => Object.hasOwn(raw, f))) {
    throw new CommandError(
      'InvalidOptions',
      `${field} ${isPlainObject(raw) ? formatDoc(raw) : String(raw)} is not valid for shard key pattern ${formatDoc(coll.key.pattern)}`,
    );
  }
  return coll.key.fields.map((f) => raw[f]);
}

/** `{ split: ns, middle: {...} }`: a new chunk starts at `middle` (a hashed field's value is the hash). */
function split(ctx: CommandContext): Doc {
  const coll = shardedCollection(ctx);
  if (ctx.body.middle === undefined) throw notImplemented("split without 'middle' (find, bounds)");
  clusterOf(ctx).split(coll, bound(coll, ctx.body.middle, 'middle'));
  return { ok: 1 };
}

/** `{ moveChunk: ns, find: {...} | bounds: [min, max], to }`: the chunk holding that key moves to `to`. */
function moveChunk(ctx: CommandContext): Doc {
  const coll = shardedCollection(ctx);
  const { find, bounds, to } = ctx.body;
  if (typeof to !== 'string') throw new CommandError('TypeMismatch', "BSON field 'moveChunk.to' is missing but a required field");
  let at: KeyTuple;
  if (isPlainObject(find)) at = coll.key.tupleOf(find);
  else if (Array.isArray(bounds) && bounds.length === 2) at = bound(coll, bounds[0], 'bounds');
  else throw new CommandError('InvalidOptions', 'need to specify either a find query, or both lower and upper bounds.');
  clusterOf(ctx).moveChunk(coll, at, to);
  return { millis: 0, ok: 1 };
}

/** The emulator's own command: routing counts per namespace and shard; `reset: true` clears them after answering. */
function loomShardStats(ctx: CommandContext): Doc {
  const cluster = clusterOf(ctx);
  const reply = { ...cluster.stats.report(), ok: 1 };
  if (ctx.body.reset === true) cluster.stats.reset();
  return reply;
}

export const shardingCommands: CommandTable = {
  enableSharding: { run: enableSharding, fields: ['primaryShard'], adminOnly: true },
  shardCollection: {
    run: shardCollection,
    fields: ['key', 'unique', 'numInitialChunks', 'presplitHashedZones', 'collation', 'implicitlyCreateIndex', 'enforceUniquenessCheck'],
    unsupported: ['timeseries'],
    adminOnly: true,
  },
  listShards: { run: listShards, fields: [], adminOnly: true },
  split: { run: split, fields: ['middle', 'find', 'bounds'], adminOnly: true },
  moveChunk: { run: moveChunk, fields: ['find', 'bounds', 'to', '_waitForDelete', 'waitForDelete', 'forceJumbo', 'secondaryThrottle'], adminOnly: true },
  loomShardStats: { run: loomShardStats, fields: ['reset'], adminOnly: true },
};
