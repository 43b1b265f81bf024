import 'reflect-metadata';
import { describeSandboxScenarios } from '@loom/testing/jest';
import { useMongoFixture } from './fixture.js';

// The sandbox scenarios MemoryStore runs (packages/core/test/sandbox.test.ts), on MongoDB: the
// bridge's ctx calls (steps, sleeps, waits, children, progress) go to MongoStore from the engine's
// thread while the handlers run in worker threads. Retention is off (the fake clock's times are in
// the past for the server's TTL monitor).
const mongo = useMongoFixture();
describeSandboxScenarios('MongoStore', () => ({ store: mongo.newStore({ retention: { completed: false } }) }));
