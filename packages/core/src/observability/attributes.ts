/**
 * Names of the spans, attributes and instruments Loom reports (OpenTelemetry messaging semantic
 * conventions where one applies). packages/core/README.md lists them for users; keep both in step.
 */

/** The instrumentation scope of Loom's tracer and meter. */
export const SCOPE = '@loom/core';

export const ATTR = {
  system: 'messaging.system',
  destination: 'messaging.destination.name',
  messageId: 'messaging.message.id',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  batchCount: 'messaging.batch.message_count',
  jobName: 'loom.job.name',
  attempt: 'loom.job.attempt',
  outcome: 'loom.job.outcome',
  deduplicated: 'loom.job.deduplicated',
  status: 'loom.job.status',
  stepName: 'loom.step.name',
} as const;

/** `messaging.system` of every span. */
export const SYSTEM = 'loom';

export const METRIC = {
  completed: 'loom.jobs.completed',
  failed: 'loom.jobs.failed',
  dead: 'loom.jobs.dead',
  duration: 'loom.job.duration',
  wait: 'loom.job.wait',
  depth: 'loom.queue.depth',
} as const;
