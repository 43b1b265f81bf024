import { MongoClient } from 'mongodb';
import { MongoEmulator } from '@loom/mongo-emulator';

const emu = await MongoEmulator.start({ port: 0, shards: 4, version: '7.0' });
const client = new MongoClient(emu.uri); // mongodb://127.0.0.1:PORT/ (no replicaSet)
await client.db('admin').command({ shardCollection: 'app.jobs', key: { queue: 1, partition: 1 } });
emu.shardStats(); // the same as { loomShardStats: 1 }
emu.resetShardStats();

export { client };
