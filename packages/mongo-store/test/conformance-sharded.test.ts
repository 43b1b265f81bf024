import { describeStoreConformance } from '@loom/testing/jest';
import { MongoStore } from '../src/index.js';
import { quietLogger } from './fixture.js';
import { SHARDED_QUEUES, useShardedEmulator } from './sharded.js';

// The JobStore contract on an emulated sharded cluster: 4 virtual shards, MongoDB 7.0 (where mongos
// refuses a findAndModify without the shard key), every queue of the suite split into 8 partitions
// and its jobs collection sharded on { queue, partition } as `loom shard-plan` prints. The cases
// share one such database, emptied after each (the plan runs once, not per case).
const cluster = useShardedEmulator(4, '7.0');
describeStoreConformance(
  'MongoStore (sharded, 4 shards, 8 partitions)',
  async () => {
    const { store, database, release } = await cluster.pooledStore(8, { retention: { completed: false } });
    const partitions = Object.fromEntries(SHARDED_QUEUES.map((q) => [q, 8]));
    return {
      store,
      peer: () => new MongoStore({ client: cluster.client, database, logger: quietLogger, retention: { completed: false }, partitions }),
      cleanup: release,
    };
  },
  // Claim order holds within a partition: the cases asserting one order over a whole queue are skipped.
  { partitioned: true },
);
