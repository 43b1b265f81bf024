import 'reflect-metadata';
import { describeWaitTokenScenarios, describeWorkflowScenarios, describeWorkflowVersioning } from '@loom/testing/jest';
import { useMongoFixture } from './fixture.js';

// The workflow scenarios MemoryStore runs (packages/core/test/workflows.test.ts), on MongoDB:
// each test gets a fresh database. Retention is off: the fake clock's times are in the past for the
// server's TTL monitor.
const mongo = useMongoFixture();
describeWorkflowScenarios('MongoStore', () => ({ store: mongo.newStore({ retention: { completed: false } }) }));
describeWorkflowVersioning('MongoStore', () => ({ store: mongo.newStore({ retention: { completed: false } }) }));
describeWaitTokenScenarios('MongoStore', () => ({ store: mongo.newStore({ retention: { completed: false } }) }));
