import 'reflect-metadata';
import { MemoryStore } from '@loom/core';
import { describeWorkflowScenarios } from '@loom/testing/jest';

// The shared workflow scenarios (packages/testing/src/workflow-scenarios.ts) on the in-process store;
// packages/mongo-store/test/workflows.test.ts runs the same ones on MongoDB.
describeWorkflowScenarios('MemoryStore', () => ({ store: new MemoryStore() }));
