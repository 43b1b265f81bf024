/**
 * mongos's view of a simulated sharded cluster: the shards, each database's primary shard, the
 * sharded collections with their keys and chunks (what config.collections, config.chunks and
 * config.databases hold on a real cluster). Documents stay in the emulator's one store: this
 * decides only which shards a command would reach.
 */
import { Long, ObjectId, Timestamp, UUID } from 'bson';
import { CommandError } from '../errors.js';
import { Catalog } from '../storage/catalog.js';
import type { Doc } from '../values.js';
import { compareTuples, MAX_KEY, MIN_KEY, ShardKey, type KeyTuple } from './shard-key.js';
import type { KeyRange } from './targeting.js';
import { ShardStats } from './stats.js';

export interface Chunk {
  id: ObjectId;
  min: KeyTuple;
  max: KeyTuple;
  shard: string;
  lastmod: Timestamp;
}

export interface ShardedCollection {
  ns: string;
  key: ShardKey;
  unique: boolean;
  uuid: UUID;
  epoch: ObjectId;
  created: Date;
  /** Sorted by `min`; together they cover MinKey..MaxKey with no gap. */
  chunks: Chunk[];
}

export interface ClusterOptions {
  shards: number;
  /** The MongoDB version whose routing rules apply (e.g. '7.0', '8.0'); default '7.0'. */
  version?: string;
}

/** The lowest and highest 64-bit hash values (hashed key chunks split this range). */
const HASH_MIN = -(2n ** 63n);
const HASH_SPAN = 2n ** 64n;

export class ShardedCluster {
  readonly shardNames: string[];
  readonly version: string;
  /** From 7.1 on, single writes without the shard key are accepted (the two-phase write). */
  readonly writesWithoutShardKey: boolean;
  readonly stats: ShardStats;
  private readonly databases = new Map<string, { primary: string; uuid: UUID }>();
  private readonly collections = new Map<string, ShardedCollection>();
  private chunkVersion = 1;
  private configCache?: Catalog;

  constructor(options: ClusterOptions) {
    if (!Number.isInteger(options.shards) || options.shards < 1) throw new TypeError(`shards must be a positive integer, got ${String(options.shards)}`);
    this.shardNames = Array.from({ length: options.shards }, (_, i) => `shard${i}`);
    this.version = options.version ?? '7.0';
    const [major, minor] = this.version.split('.').map(Number);
    if (!Number.isInteger(major) || !Number.isInteger(minor)) throw new TypeError(`version must look like '7.0' or '8.0', got '${this.version}'`);
    this.writesWithoutShardKey = major > 7 || (major === 7 && minor >= 1);
    this.stats = new ShardStats(this.shardNames);
  }

  /** The database's primary shard (where its unsharded collections live), creating its entry. */
  primaryOf(db: string): string {
    let entry = this.databases.get(db);
    if (!entry) {
      // A new database goes to the shard with the fewest primaries, as mongos picks the
      // least-loaded shard (ties: the first).
      const load = new Map(this.shardNames.map((s) => [s, 0]));
      for (const d of this.databases.values()) load.set(d.primary, (load.get(d.primary) ?? 0) + 1);
      const primary = [...load].sort((a, b) => a[1] - b[1])[0][0];
      this.databases.set(db, (entry = { primary, uuid: new UUID() }));
      this.configCache = undefined;
    }
    return entry.primary;
  }

  enableSharding(db: string, primaryShard?: string): void {
    if (primaryShard !== undefined) {
      this.requireShard(primaryShard);
      const existing = this.databases.get(db);
      if (existing && existing.primary !== primaryShard) {
        throw new CommandError('NamespaceExists', `database ${db} already exists with primary shard ${existing.primary}`);
      }
      if (!existing) this.databases.set(db, { primary: primaryShard, uuid: new UUID() });
    }
    this.primaryOf(db);
    this.configCache = undefined;
  }

  get(ns: string): ShardedCollection | undefined {
    return this.collections.get(ns);
  }

  /**
   * Registers a sharded collection. A key whose first field is hashed starts with
   * `numInitialChunks` (default 2 per shard) equal ranges of the hash, in contiguous runs per
   * shard; a ranged key starts as one chunk on the primary shard, as on mongos (split and move
   * chunks with `split` and `moveChunk`).
   */
  shard(ns: string, key: ShardKey, unique: boolean, uuid: UUID, numInitialChunks?: number): ShardedCollection {
    const primary = this.primaryOf(ns.slice(0, ns.indexOf('.')));
    const fill = (bound: unknown) => new Array<unknown>(key.fields.length - 1).fill(bound);
    let chunks: Chunk[];
    if (key.hashed[0]) {
      const n = numInitialChunks && numInitialChunks > 0 ? numInitialChunks : 2 * this.shardNames.length;
      const bounds: KeyTuple[] = [[MIN_KEY, ...fill(MIN_KEY)]];
      for (let i = 1; i < n; i++) bounds.push([Long.fromBigInt(HASH_MIN + (HASH_SPAN * BigInt(i)) / BigInt(n)), ...fill(MIN_KEY)]);
      bounds.push([MAX_KEY, ...fill(MAX_KEY)]);
      chunks = [];
      for (let i = 0; i < n; i++) chunks.push(this.chunk(bounds[i], bounds[i + 1], this.shardNames[Math.floor((i * this.shardNames.length) / n)]));
    } else {
      chunks = [this.chunk([MIN_KEY, ...fill(MIN_KEY)], [MAX_KEY, ...fill(MAX_KEY)], primary)];
    }
    const coll: ShardedCollection = { ns, key, unique, uuid, epoch: new ObjectId(), created: new Date(), chunks };
    this.collections.set(ns, coll);
    this.configCache = undefined;
    return coll;
  }

  /** Forgets a collection's sharding (drop, or dropDatabase for every collection of `db`). */
  forget(ns: string): void {
    if (this.collections.delete(ns)) this.configCache = undefined;
  }

  /** dropDatabase: its sharded collections and its entry (primary shard) go, as on mongos. */
  forgetDatabase(db: string): void {
    for (const ns of [...this.collections.keys()]) if (ns.startsWith(`${db}.`)) this.forget(ns);
    if (this.databases.delete(db)) this.configCache = undefined;
  }

  /** Splits the chunk holding `at` so that a new chunk starts at `at` (the `split` command's `middle`). */
  split(coll: ShardedCollection, at: KeyTuple): void {
    const i = this.chunkIndex(coll, at);
    const chunk = coll.chunks[i];
    if (compareTuples(chunk.min, at) === 0) throw new CommandError('InvalidOptions', `split key ${JSON.stringify(at)} is the lower bound of an existing chunk`);
    coll.chunks.splice(i, 1, this.chunk(chunk.min, at, chunk.shard), this.chunk(at, chunk.max, chunk.shard));
    this.configCache = undefined;
  }

  /** Moves the chunk holding `at` to shard `to` (the `moveChunk` command). */
  moveChunk(coll: ShardedCollection, at: KeyTuple, to: string): void {
    this.requireShard(to);
    const i = this.chunkIndex(coll, at);
    coll.chunks[i] = { ...this.chunk(coll.chunks[i].min, coll.chunks[i].max, to), id: coll.chunks[i].id };
    this.configCache = undefined;
  }

  /** The shard owning the key-space position `tuple`. */
  shardOf(coll: ShardedCollection, tuple: KeyTuple): string {
    return coll.chunks[this.chunkIndex(coll, tuple)].shard;
  }

  /** The shards owning chunks that overlap `ranges` (undefined: every shard with chunks). */
  shardsFor(coll: ShardedCollection, ranges: KeyRange[] | undefined): string[] {
    const found = new Set<string>();
    for (const chunk of coll.chunks) {
      if (!ranges || ranges.some((r) => compareTuples(chunk.min, r.max) <= 0 && compareTuples(r.min, chunk.max) < 0)) found.add(chunk.shard);
    }
    return this.shardNames.filter((s) => found.has(s));
  }

  /** Every shard (a change stream, a DDL command on a sharded collection). */
  allShards(): string[] {
    return this.shardNames;
  }

  private chunkIndex(coll: ShardedCollection, tuple: KeyTuple): number {
    let lo = 0;
    let hi = coll.chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (compareTuples(coll.chunks[mid].min, tuple) <= 0) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  private chunk(min: KeyTuple, max: KeyTuple, shard: string): Chunk {
    return { id: new ObjectId(), min, max, shard, lastmod: new Timestamp({ t: this.chunkVersion++, i: 0 }) };
  }

  private requireShard(name: string): void {
    if (!this.shardNames.includes(name)) throw new CommandError('ShardNotFound', `Shard ${name} not found`);
  }

  /** config.shards, config.databases, config.collections and config.chunks, as mongos answers finds on them. */
  configCatalog(): Catalog {
    if (this.configCache) return this.configCache;
    const catalog = new Catalog();
    const put = (coll: string, doc: Doc) => catalog.getOrCreate('config', coll).coll.insert(doc, 0);
    const time = new Timestamp({ t: 1, i: 1 });
    for (const name of this.shardNames) put('shards', { _id: name, host: `${name}/127.0.0.1`, state: 1, topologyTime: time });
    for (const [db, d] of this.databases) put('databases', { _id: db, primary: d.primary, version: { uuid: d.uuid, timestamp: time, lastMod: 1 } });
    for (const c of this.collections.values()) {
      put('collections', {
        _id: c.ns,
        lastmodEpoch: c.epoch,
        lastmod: c.created,
        timestamp: time,
        uuid: c.uuid,
        key: c.key.pattern,
        unique: c.unique,
        noBalance: false,
      });
      const bound = (t: KeyTuple) => Object.fromEntries(c.key.fields.map((f, i) => [f, t[i]]));
      for (const ch of c.chunks) {
        put('chunks', {
          _id: ch.id,
          uuid: c.uuid,
          min: bound(ch.min),
          max: bound(ch.max),
          shard: ch.shard,
          lastmod: ch.lastmod,
          onCurrentShardSince: time,
          history: [{ validAfter: time, shard: ch.shard }],
        });
      }
    }
    this.configCache = catalog;
    return catalog;
  }
}
