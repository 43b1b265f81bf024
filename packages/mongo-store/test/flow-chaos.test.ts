import 'reflect-metadata';
import { describeFlowChaos } from '@loom/testing/jest';
import { useMongoFixture } from './fixture.js';

// The flow chaos scenarios MemoryStore runs (packages/core/test/flow-chaos.test.ts), on MongoDB:
// dependents settled and batch counters moved by MongoStore's atomic writes while engines die
// around them. Smaller than on MemoryStore (each engine's claims go through the emulator); the
// deaths are the same. Retention is off (the fake clock's times are in the past for the TTL monitor).
const mongo = useMongoFixture();
describeFlowChaos(
  'MongoStore',
  async () => {
    const store = mongo.newStore({ retention: { completed: false } });
    await store.init();
    return store;
  },
  { nodes: 1_000, batches: 20, members: 50, timeoutMs: 300_000 },
);
