/**
 * `@loom/core`: durable background jobs for TypeScript.
 *
 * ```ts
 * import 'reflect-metadata';
 * import { Container } from 'inversify';
 * import { Job, Loom, MemoryStore } from '@loom/core';
 *
 * @Job({ retries: 3 })
 * class Hello { async run(payload: { name: string }) { console.log(`hello ${payload.name}`); } }
 *
 * const loom = await Loom.create({ container: new Container(), store: new MemoryStore() });
 * await loom.start();
 * await loom.enqueue(Hello, { name: 'world' });
 * ```
 *
 * @packageDocumentation
 */
export * from './duration.js';
export * from './clock.js';
export * from './errors.js';
export * from './job-record.js';
export * from './store.js';
export * from './memory-store.js';
export * from './logger.js';
export * from './backoff.js';
export * from './engine-errors.js';
export * from './plain-data.js';
export type { JobClass, JobHandler, PayloadOf } from './job-class.js';
export type { JobContext } from './job-context.js';
export type { EnqueueOptions } from './enqueue-options.js';
export type { JobOptions, BackoffOptions, SchemaPayload } from './job-options.js';
export { Job } from './job-decorator.js';
export { JOB_OPTIONS_METADATA_KEY, readJobOptions, decoratedJobClasses } from './job-metadata.js';
export type { JobDefinition } from './job-definition.js';
export { jobOptionsSchema } from './job-options-schema.js';
export type { LoomEventMap, LoomEventName, LoomEventListener, JobEventInfo } from './events.js';
export type { LoomOptions } from './loom-options.js';
export { DeadLetters } from './dead-letters.js';
export { Loom, type EnqueueArgs, type LoomStats, type LoomTestHooks } from './loom.js';
export type { InFlightRun } from './worker-pool.js';
export { MAX_STEP_RESULT_BYTES, MAX_STEP_RESULTS_TOTAL_BYTES } from './workflow/step-limits.js';
export { JOB_WAIT_RECHECK_MS } from './workflow/parent-wake.js';
export { StepOrderError, StepResultTooLargeError, WaitTimeoutError, ChildFailedError, type StepRef } from './workflow/workflow-errors.js';
export type { ChildEnqueueOptions, WaitForJobOptions, WaitForSignalOptions } from './workflow/workflow-options.js';
export * from './cron/index.js';
export { StoreTimeoutError } from './store-deadline.js';
