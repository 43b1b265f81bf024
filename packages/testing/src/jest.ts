/**
 * `@loom/testing/jest`: the suites that define jest tests (`describe`/`it`/`expect` from jest).
 * Call them at the top level of a jest test file:
 *
 * ```ts
 * import { MemoryStore } from '@loom/core';
 * import { describeStoreConformance } from '@loom/testing/jest';
 *
 * describeStoreConformance('MemoryStore', () => ({ store: new MemoryStore() }));
 * ```
 *
 * @packageDocumentation
 */
export * from './conformance.js';
export * from './workflow-scenarios.js';
export * from './workflow-versioning.js';
export * from './wait-token-scenarios.js';
export * from './retention-scenarios.js';
export * from './sandbox-scenarios.js';
export * from './flow-chaos-scenarios.js';
