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
export * from './support/duration.js';
export * from './support/clock.js';
export * from './store/job-record.js';
export * from './store/wait-token.js';
export * from './store/store.js';
export * from './store/signal-limit.js';
export * from './store/operations.js';
export * from './store/payload-match.js';
export * from './store/payload-limits.js';
export * from './store/flow.js';
export * from './store/batch.js';
export * from './store/presence.js';
export * from './store/queue-series.js';
export * from './store/lifecycle.js';
export * from './store/dependencies.js';
export * from './store/memory-store/memory-store.js';
export * from './support/logger.js';
export * from './jobs/backoff.js';
export * from './support/errors.js';
export * from './support/plain-data.js';
export type { BatchContext, BatchHandler, BatchItem, BatchSummary, JobClass, JobContext, JobHandler, PayloadOf, RunHandler } from './jobs/job-class.js';
export { Batches, type BatchJob, type CreateBatchOptions } from './engine/batches.js';
export type { EnqueueOptions } from './store/enqueue-options.js';
export type { JobOptions, BackoffOptions, BatchOptions, SchemaPayload, SandboxJobOptions, SandboxResourceLimits } from './jobs/job-options.js';
export { MAX_BATCH_SIZE } from './jobs/job-options-schema.js';
export { scheduleOptionsSchema, type CatchUpPolicy, type OverlapPolicy, type ScheduleOptions } from './jobs/schedule-options-schema.js';
export { Job } from './jobs/job-decorator.js';
export { JOB_OPTIONS_METADATA_KEY, readJobOptions, decoratedJobClasses } from './jobs/job-metadata.js';
export type { JobDefinition } from './jobs/job-definition.js';
export { jobOptionsSchema } from './jobs/job-options-schema.js';
export type { LoomEventMap, LoomEventName, LoomEventListener, JobEventInfo } from './engine/events.js';
export type { LoomOptions } from './loom-options.js';
export type { ResolveJob } from './jobs/discovery.js';
export type { SandboxOptions } from './sandbox/sandbox-options.js';
export { DeadLetters, type DeadLetterRetryOptions } from './engine/dead-letters.js';
export { Flows, type FlowDefinition, type FlowNode, type FlowResult } from './operations/flows.js';
export {
  Jobs,
  type CancelOptions,
  type CancelResult,
  type RetryResult,
  type RemoveResult,
  type RunNowResult,
  type JobsHooks,
  type ForkOptions,
  type ForkResult,
} from './operations/jobs.js';
export { Queues, type QueuesHooks } from './operations/queues.js';
export {
  BULK_BATCH,
  BULK_SAMPLE,
  MAX_BULK_IDS,
  bulkStatuses,
  type BulkAction,
  type BulkCancelOptions,
  type BulkOptions,
  type BulkResult,
  type BulkSkip,
  type BulkTarget,
  type CleanOptions,
  type CleanStatus,
} from './operations/bulk-jobs.js';
export { RUN_RECORD_FORMAT, RUN_RECORD_VERSION, exportRun, importSteps, type RunRecord, type ExportedError } from './operations/run-export.js';
export { Tokens, type TokenResult, type TokensHooks } from './operations/tokens.js';
export { Workers } from './operations/workers.js';
export { PRESENCE_MISSED_BEATS } from './engine/presence.js';
export { LOOM_VERSION } from './support/version.js';

export { MIN_WAIT_TOKEN_SECRET_LENGTH, signWaitToken, verifyWaitTokenSignature, waitTokenUrl, type WaitTokenLinkOptions } from './support/token-links.js';
export { MAX_JOB_PAGE, decodeCursor, encodeCursor, type JobListFilter, type JobPage } from './operations/job-list-filter.js';
export { Loom, type EnqueueArgs, type LoomStats } from './loom.js';
export { MAX_STEP_RESULT_BYTES, MAX_STEP_RESULTS_TOTAL_BYTES } from './workflow/step-limits.js';
export { JOB_WAIT_FIRST_RECHECK_MS, JOB_WAIT_RECHECK_MS } from './workflow/parent-wake.js';
export type { StepRef } from './workflow/step-log.js';
export type {
  ChildEnqueueOptions,
  CreateWaitTokenOptions,
  SignalOptions,
  WaitForJobOptions,
  WaitForSignalOptions,
  WaitForTokenOptions,
  WaitToken,
} from './jobs/workflow-options.js';
export * from './cron/index.js';
