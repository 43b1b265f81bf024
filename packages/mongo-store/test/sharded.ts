import { afterAll, beforeAll } from '@jest/globals';
import { MongoEmulator } from '@loom/mongo-emulator';
import { MongoClient } from 'mongodb';
import { MongoStore, shardPlan, type MongoStoreOptions } from '../src/index.js';
import { quietLogger } from './fixture.js';

/** The queues the conformance suite and the sharding tests use, each split into `partitions`. */
export const SHARDED_QUEUES = ['default', 'mail', 'emails', 'q1', 'q2', 'other', 'texts', 'reports', 'paused-queue', 'own-suite', 'flow'];

export interface ShardedFixture {
  readonly emulator: MongoEmulator;
  readonly client: MongoClient;
  /** Shards a new database's jobs collection as `loom shard-plan` says, and returns a store on it (not initialised). */
  newStore(partitions: number, overrides?: Partial<MongoStoreOptions>): Promise<{ store: MongoStore; database: string }>;
  /**
   * Like {@link newStore}, on a database sharded once and emptied between uses: `release()` (after
   * the store is closed) empties its sharded collections, drops the others and gives it back for a
   * later call with the same `partitions` (and the same `overrides`: the indexes a store made stay
   * with its sharded collections). The shard plan is ~180 commands (a split and a moveChunk per
   * partition of each queue): run per case, it was most of the sharded conformance suite's time
   * (53,856 of its 75,758 commands). Each call still gets empty collections whose chunks lie as
   * the plan put them.
   */
  pooledStore(partitions: number, overrides?: Partial<MongoStoreOptions>): Promise<{ store: MongoStore; database: string; release: () => Promise<void> }>;
  /** Runs the plan of `loom shard-plan` on `database`; returns the collections it sharded. */
  shard(database: string, partitions: Record<string, number>): Promise<string[]>;
}

let counter = 0;

/** An emulated sharded cluster (`shards` virtual shards, MongoDB `version`) for one test file. */
export function useShardedEmulator(shards = 4, version = '7.0'): ShardedFixture {
  let emulator: MongoEmulator | undefined;
  let client: MongoClient | undefined;
  /** Sharded databases given back by `release()`, by partition count, with the collections their plan sharded. */
  const pool = new Map<number, { database: string; sharded: string[] }[]>();
  beforeAll(async () => {
    emulator = await MongoEmulator.start({ port: 0, ttlIntervalMs: 0, shards, version });
    client = new MongoClient(emulator.uri);
    await client.connect();
  });
  afterAll(async () => {
    await client?.close();
    await emulator?.stop();
  });
  /** Every queue of {@link SHARDED_QUEUES} split into `partitions`. */
  const countsOf = (partitions: number): Record<string, number> => Object.fromEntries(SHARDED_QUEUES.map((q) => [q, partitions]));
  /** A store (not initialised) on `database`, partitioned as the plan sharded it. */
  const storeOn = (database: string, partitions: number, overrides: Partial<MongoStoreOptions>): MongoStore =>
    new MongoStore({ client: fixture.client, database, logger: quietLogger, partitions: countsOf(partitions), ...overrides } as MongoStoreOptions);
  const fixture: ShardedFixture = {
    get emulator(): MongoEmulator {
      if (!emulator) throw new Error('the emulator exists only inside tests');
      return emulator;
    },
    get client(): MongoClient {
      if (!client) throw new Error('the emulator exists only inside tests');
      return client;
    },
    async shard(database, partitions) {
      const { shards: list } = await fixture.client.db('admin').command({ listShards: 1 });
      const names = (list as { _id: string }[]).map((s) => s._id);
      // One Db each: the driver builds a Db's options on every client.db() call (~1 s of this file's CPU).
      const admin = fixture.client.db('admin');
      const target = fixture.client.db(database);
      const sharded: string[] = [];
      for (const { db, command } of shardPlan({ database, partitions, shards: names })) {
        try {
          await (db === 'admin' ? admin : target).command(command);
        } catch (err) {
          // Dropping an index of a collection that does not exist yet is fine.
          if (!('dropIndexes' in command)) throw err;
        }
        if (typeof command.shardCollection === 'string') sharded.push(command.shardCollection.slice(database.length + 1));
      }
      return sharded;
    },
    async newStore(partitions, overrides = {}) {
      const database = `sharded_${process.pid}_${++counter}`;
      await fixture.shard(database, countsOf(partitions));
      return { store: storeOn(database, partitions, overrides), database };
    },
    async pooledStore(partitions, overrides = {}) {
      const free = pool.get(partitions) ?? [];
      pool.set(partitions, free);
      let entry = free.shift();
      if (!entry) {
        const database = `sharded_${process.pid}_${++counter}`;
        entry = { database, sharded: await fixture.shard(database, countsOf(partitions)) };
      }
      const { database, sharded } = entry;
      const store = storeOn(database, partitions, overrides);
      const release = async (): Promise<void> => {
        const db = fixture.client.db(database);
        for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) {
          if (sharded.includes(name)) await db.collection(name).deleteMany({});
          else await db.collection(name).drop();
        }
        free.push(entry);
      };
      return { store, database, release };
    },
  };
  return fixture;
}
