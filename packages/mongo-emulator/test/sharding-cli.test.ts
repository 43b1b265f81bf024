import { describe, expect, it } from '@jest/globals';
import { MongoClient } from 'mongodb';
import { runCli } from '../src/cli.js';
import type { ShardStatsReport } from '../src/index.js';
import { fakeIo } from './cli-io.js';

// `--shards N` starts the sharded cluster simulation (see sharding.test.ts for its rules).
describe('loom-mongo-emulator --shards', () => {
  it('prints a mongos URI (no replicaSet) whose cluster has N shards and the chosen rules', async () => {
    const { out, io, signals } = fakeIo();
    const run = await runCli(['--port', '0', '--shards', '3', '--server-version', '8.0'], io);
    expect(out.join('')).toMatch(/^mongodb:\/\/127\.0\.0\.1:\d+\/\n$/);
    const client = new MongoClient(out.join('').trim());
    try {
      const admin = client.db('admin');
      expect((await admin.command({ hello: 1 })).msg).toBe('isdbgrid');
      expect((await admin.command({ listShards: 1 })).shards).toHaveLength(3);
      await admin.command({ shardCollection: 'cli.c', key: { k: 'hashed' } });
      // 8.0 rules: a findAndModify without the shard key is accepted (broadcast).
      await client
        .db('cli')
        .collection('c')
        .findOneAndUpdate({ other: 1 }, { $set: { x: 1 } });
      const stats = (await admin.command({ loomShardStats: 1 })) as ShardStatsReport;
      expect(stats.namespaces.find((n) => n.ns === 'cli.c')?.broadcast.findAndModify).toBe(1);
    } finally {
      await client.close();
    }
    signals.emit('SIGTERM');
    expect(await run.exited).toBe(0);
  });

  it('rejects a bad shard count, --shards with --standalone, and --server-version alone (exit 2)', async () => {
    for (const args of [
      ['--shards', '0'],
      ['--shards', 'x'],
      ['--shards', '2', '--standalone'],
      ['--server-version', '8.0'],
    ]) {
      const { err, io } = fakeIo();
      const run = await runCli(['--port', '0', ...args], io);
      expect(await run.exited).toBe(2);
      expect(err.join('')).toMatch(/--shards/);
    }
  });
});
