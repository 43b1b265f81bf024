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
  /** Runs the plan of `loom shard-plan` on `database`. */
  shard(database: string, partitions: Record<string, number>): Promise<void>;
}

let counter = 0;

/** An emulated sharded cluster (`shards` virtual shards, MongoDB `version`) for one test file. */
export function useShardedEmulator(shards = 4, version = '7.0'): ShardedFixture {
  let emulator: MongoEmulator | undefined;
  let client: MongoClient | undefined;
  beforeAll(async () => {
    emulator = await MongoEmulator.start({ port: 0, ttlIntervalMs: 0, shards, version });
    client = new MongoClient(emulator.uri);
    await client.connect();
  });
  afterAll(async () => {
    await client?.close();
    await emulator?.stop();
  });
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
      for (const { db, command } of shardPlan({ database, partitions, shards: names })) {
        try {
          await (db === 'admin' ? admin : target).command(command);
        } catch (err) {
          // Dropping an index of a collection that does not exist yet is fine.
          if (!('dropIndexes' in command)) throw err;
        }
      }
    },
    async newStore(partitions, overrides = {}) {
      const database = `sharded_${process.pid}_${++counter}`;
      const counts = Object.fromEntries(SHARDED_QUEUES.map((q) => [q, partitions]));
      await fixture.shard(database, counts);
      const store = new MongoStore({ client: fixture.client, database, logger: quietLogger, partitions: counts, ...overrides } as MongoStoreOptions);
      return { store, database };
    },
  };
  return fixture;
}
