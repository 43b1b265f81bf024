/**
 * `@loom/testing`: the test kit. This entry imports no test runner, so it works under jest,
 * vitest, `node --test` and in plain scripts. The jest-bound suites (store conformance, workflow
 * scenarios) live in `@loom/testing/jest`; `startTestMongo` in `@loom/testing/mongo`.
 *
 * @packageDocumentation
 */
export * from './fake-clock.js';
export * from './capture-logger.js';
export * from './store-activity.js';
export * from './test-loom.js';
export * from './crashable-store.js';
export * from './replay-run.js';
