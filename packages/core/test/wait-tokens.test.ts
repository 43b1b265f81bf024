import 'reflect-metadata';
import { MemoryStore } from '@loom/core';
import { describeWaitTokenScenarios } from '@loom/testing/jest';

// Wait tokens (issue 35, item 4). The scenarios are shared with MongoStore
// (packages/mongo-store/test/workflows.test.ts runs the same ones on MongoDB).
describeWaitTokenScenarios('MemoryStore', () => ({ store: new MemoryStore() }));
