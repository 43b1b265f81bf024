import 'reflect-metadata';
import { MemoryStore } from '@loom/core';
import { describeRetentionScenarios, SCENARIO_RETENTION_DAYS } from '@loom/testing/jest';

// Workflows against retention (packages/testing/src/retention-scenarios.ts) on a MemoryStore that
// removes completed jobs after the scenarios' retention; packages/mongo-store/test/retention.test.ts
// runs the same ones on MongoDB.
describeRetentionScenarios('MemoryStore', () => {
  const store = new MemoryStore({ retention: { completed: `${SCENARIO_RETENTION_DAYS}d` } });
  // Retention is lazy: any operation at `now` sweeps (an empty enqueue stores nothing).
  return { store, expireCompleted: async (now) => void (await store.enqueue([], { now })) };
});
