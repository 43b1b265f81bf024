import { describe, expect, it } from '@jest/globals';
import { LoomError } from '@loom/core';
import { MongoStore } from '../src/index.js';
import { quietLogger } from './fixture.js';
import { useShardedEmulator } from './sharded.js';

// Loom.create (store.init) on a sharded cluster checks the shard keys of Loom's collections.
const cluster = useShardedEmulator(4, '7.0');
let n = 0;
const newDatabase = () => `shard_keys_${process.pid}_${++n}`;
const storeOn = (database: string) => new MongoStore({ client: cluster.client, database, logger: quietLogger, partitions: { default: 4 } });

describe('shard keys of Loom collections', () => {
  it('starts on a database sharded as `loom shard-plan` prints, with unique indexes prefixed by the shard key', async () => {
    const database = newDatabase();
    await cluster.shard(database, { default: 4 });
    const store = storeOn(database);
    await store.init();
    const indexes = (await cluster.client.db(database).collection('loom_jobs').listIndexes().toArray()) as { name: string }[];
    expect(indexes.find((ix) => ix.name === 'loom_idempotency_key')).toMatchObject({ key: { queue: 1, partition: 1, idempotencyKey: 1 }, unique: true });
    await store.close();
  });

  it('starts on an unsharded database of a sharded cluster (every collection on the primary shard)', async () => {
    const store = storeOn(newDatabase());
    await store.init();
    await store.close();
  });

  it('refuses a jobs collection sharded on another key, saying what to run', async () => {
    const database = newDatabase();
    const admin = cluster.client.db('admin');
    await admin.command({ enableSharding: database });
    await admin.command({ shardCollection: `${database}.loom_jobs`, key: { _id: 'hashed' } });
    const err = await storeOn(database)
      .init()
      .catch((e: unknown) => e);
    expect(LoomError.is(err, 'SHARD_KEY_MISMATCH')).toBe(true);
    expect((err as Error).message).toContain(`collection ${database}.loom_jobs is sharded on {"_id":"hashed"}`);
    expect((err as Error).message).toContain('reshardCollection');
    expect((err as Error).message).toContain(`loom shard-plan --database ${database}`);
  });

  it('refuses another collection of Loom sharded on a key other than _id', async () => {
    const database = newDatabase();
    const admin = cluster.client.db('admin');
    await admin.command({ enableSharding: database });
    await admin.command({ shardCollection: `${database}.loom_schedules`, key: { lastFireAt: 1 } });
    const err = await storeOn(database)
      .init()
      .catch((e: unknown) => e);
    expect(LoomError.is(err, 'SHARD_KEY_MISMATCH')).toBe(true);
    expect((err as Error).message).toContain(`${database}.loom_schedules`);
  });
});
