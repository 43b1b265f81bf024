export * from './conformance.js';
export * from './fake-clock.js';
export * from './capture-logger.js';
export * from './store-activity.js';
export * from './test-loom.js';
export * from './crashable-store.js';
export * from './workflow-scenarios.js';
