import { LoomError } from '../../support/errors.js';
import type { JobTraceContext, NewJob } from '../job-record.js';

function invalid(what: string, detail: string): LoomError {
  return new LoomError('INVALID_ARGUMENT', `MemoryStore: ${what} ${detail}; nothing changed`);
}

/**
 * Refuses anything but a valid Date. An Invalid Date (NaN) would compare false both ways and
 * quietly break the claim index's ordering for every other job of its lane.
 */
export function assertDate(value: unknown, what: string): void {
  const isDate = value instanceof Date || Object.prototype.toString.call(value) === '[object Date]';
  if (!isDate || Number.isNaN((value as Date).getTime())) {
    throw invalid(what, `must be a valid Date, got ${isDate ? 'an Invalid Date' : typeof value}`);
  }
}

/** Refuses anything but a string (an object here could be a query operator smuggled in from JSON). */
export function assertString(value: unknown, what: string): void {
  if (typeof value !== 'string') throw invalid(what, `must be a string, got ${value === null ? 'null' : typeof value}`);
}

/** As {@link assertString}, but `undefined` is fine. */
export function assertOptionalString(value: unknown, what: string): void {
  if (value !== undefined) assertString(value, what);
}

/** Checks the fields a store relies on; the engine has already applied defaults and validated payloads. */
export function assertNewJob(job: NewJob, now: Date): void {
  assertDate(now, 'enqueue now');
  if (typeof job.name !== 'string' || job.name === '') throw invalid('a job name', 'must be a non-empty string');
  if (typeof job.queue !== 'string' || job.queue === '') throw invalid(`job "${job.name}": queue`, 'must be a non-empty string');
  if (!Number.isFinite(job.priority)) throw invalid(`job "${job.name}": priority`, `must be a finite number, got ${String(job.priority)}`);
  if (!Number.isInteger(job.maxAttempts) || job.maxAttempts < 1) {
    throw invalid(`job "${job.name}": maxAttempts`, `must be an integer >= 1, got ${String(job.maxAttempts)}`);
  }
  assertDate(job.runAt, `job "${job.name}": runAt`);
  if (job.scheduledFor !== undefined) assertDate(job.scheduledFor, `job "${job.name}": scheduledFor`);
  if (job.trace !== undefined) assertTraceContext(job.trace, `job "${job.name}": trace`);
  if (job.steps !== undefined && (!Array.isArray(job.steps) || job.steps.some((s) => typeof s?.name !== 'string'))) {
    throw invalid(`job "${job.name}": steps`, 'must be an array of step records');
  }
  for (const field of ['rateLimitKey', 'groupKey', 'debounceKey', 'forkedFrom'] as const) {
    if (job[field] !== undefined && typeof job[field] !== 'string') throw invalid(`job "${job.name}": ${field}`, `must be a string, got ${typeof job[field]}`);
  }
  if (job.debounceKey !== undefined && job.idempotencyKey !== undefined)
    throw invalid(`job "${job.name}"`, 'cannot have both a debounceKey and an idempotencyKey');
  const key: unknown = job.idempotencyKey;
  if (key !== undefined && (typeof key !== 'string' || key.length === 0)) {
    throw new LoomError(
      'INVALID_IDEMPOTENCY_KEY',
      `Job "${job.name}": idempotency keys must be non-empty strings, got ${typeof key === 'string' ? 'an empty string' : typeof key}; nothing was enqueued`,
    );
  }
}

/** A {@link JobTraceContext}: `traceparent` a string, `tracestate` a string, `link` a boolean, nothing else. */
function assertTraceContext(value: unknown, what: string): asserts value is JobTraceContext {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid(what, `must be an object, got ${Array.isArray(value) ? 'an array' : typeof value}`);
  const { traceparent, tracestate, link, ...rest } = value as Record<string, unknown>;
  if (typeof traceparent !== 'string') throw invalid(`${what}.traceparent`, `must be a string, got ${typeof traceparent}`);
  if (tracestate !== undefined && typeof tracestate !== 'string') throw invalid(`${what}.tracestate`, `must be a string, got ${typeof tracestate}`);
  if (link !== undefined && typeof link !== 'boolean') throw invalid(`${what}.link`, `must be a boolean, got ${typeof link}`);
  const extra = Object.keys(rest);
  if (extra.length > 0) throw invalid(what, `has unknown field ${JSON.stringify(extra[0])}`);
}
