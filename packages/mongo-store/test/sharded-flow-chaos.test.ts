import 'reflect-metadata';
import { describeFlowChaos } from '@loom/testing/jest';
import { useShardedEmulator } from './sharded.js';

// The flow chaos scenarios (a DAG; batches with callbacks) on the emulated sharded cluster: 4
// virtual shards, MongoDB 7.0 (mongos refuses an untargetable findAndModify), every queue split
// into 8 partitions. Engines die mid-run, around the settle of dependents and around the writes
// that end batch members; every job still completes or dies as it must (lost 0) and each batch
// callback is enqueued once. Small, to fit CI time.
const cluster = useShardedEmulator(4, '7.0');
describeFlowChaos(
  'MongoStore (sharded, 4 shards, 8 partitions)',
  async () => {
    const { store } = await cluster.newStore(8, { retention: { completed: false } });
    await store.init();
    return store;
  },
  { nodes: 80, batches: 4, members: 20, timeoutMs: 60_000 },
);
