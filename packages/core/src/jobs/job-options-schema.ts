import { z } from 'zod';
import { DEFAULT_BACKOFF, type BackoffFunction, type BackoffStrategy } from './backoff.js';
import { isDuration, MAX_TIMER_MS, toMs, type Duration } from '../support/duration.js';
import { InvalidJobOptionsError } from '../support/errors.js';
import { MAX_FLOW_CONCURRENCY, MAX_RATE_LIMIT } from '../store/flow.js';
import type { JobClass } from './job-class.js';
import type { JobDefinition, SandboxJobDefinition } from './job-definition.js';
import type { SandboxResourceLimits } from './job-options.js';

/** Most jobs one `runBatch` call takes (`@Job({ batch: { size } })`). */
export const MAX_BATCH_SIZE = 1_000;

const duration = z.custom<Duration>(isDuration, { message: "must be a duration: milliseconds >= 0 or a string like '250ms', '30s', '5m', '2h', '1d'" });
const positiveDuration = duration.refine((d) => toMs(d) > 0, { message: 'must be a duration longer than 0' });
const fn = (what: string) => z.custom<(...args: any[]) => unknown>((v) => typeof v === 'function', { message: `must be a function ${what}` });
/** A whole number from 1 to `max`; a missing one says so. */
const count = (max: number) =>
  z
    .number({ error: (issue) => (issue.input === undefined ? `is required: a whole number from 1 to ${max}` : 'must be a number') })
    .int({ message: 'must be an integer' })
    .min(1, { message: 'must be >= 1' })
    .max(max, { message: `must be <= ${max}` });
/** A function option that must be given. */
const requiredFn = (what: string) =>
  z.custom<(...args: any[]) => unknown>((v) => typeof v === 'function', {
    error: (issue) => `${issue.input === undefined ? 'is required' : 'must be'}: a function ${what}`,
  });
/** A duration longer than 0 that must be given. */
const requiredDuration = (example: string) =>
  z.custom<Duration>((v) => isDuration(v) && toMs(v) > 0, {
    error: (issue) => (issue.input === undefined ? `is required: a duration such as ${example}` : `must be a duration longer than 0, such as ${example}`),
  });

/** The `@Job` options schema. `schedule` is checked by the cron module (`compileSchedule`). */
export const jobOptionsSchema = z.strictObject({
  name: z
    .string({ message: 'must be a string' })
    .trim()
    .min(1, { message: 'must be a non-empty string' })
    .max(200, { message: 'must be at most 200 characters' })
    .optional(),
  queue: z
    .string({ message: 'must be a string' })
    .trim()
    .min(1, { message: 'must be a non-empty string' })
    .max(200, { message: 'must be at most 200 characters' })
    .optional(),
  payload: z
    .custom<z.ZodType>((v) => typeof (v as { safeParse?: unknown } | null)?.safeParse === 'function', {
      message: 'must be a zod schema, e.g. z.object({ ... })',
    })
    .optional(),
  retries: z
    .number({ message: 'must be a number' })
    .int({ message: 'must be an integer' })
    .min(0, { message: 'must be >= 0' })
    .max(10_000, { message: 'must be <= 10000' })
    .optional(),
  backoff: z.unknown().optional(),
  timeout: positiveDuration.optional(),
  priority: z.number({ message: 'must be a number' }).int({ message: 'must be an integer' }).min(-1_000_000).max(1_000_000).optional(),
  concurrency: z.number({ message: 'must be a number' }).int({ message: 'must be an integer' }).min(1, { message: 'must be >= 1' }).optional(),
  idempotencyKey: fn('(payload) => string').optional(),
  schedule: z.unknown().optional(),
  rateLimit: z
    .strictObject(
      { limit: count(MAX_RATE_LIMIT), per: requiredDuration("'1s' or '1m'"), key: fn('(payload) => string').optional() },
      { error: (issue) => (issue.code === 'invalid_type' ? "must be { limit, per, key? }, e.g. { limit: 100, per: '1m' }" : undefined) },
    )
    .optional(),
  globalConcurrency: count(MAX_FLOW_CONCURRENCY).optional(),
  group: z
    .strictObject(
      { key: requiredFn('(payload) => string'), concurrency: count(MAX_FLOW_CONCURRENCY) },
      { error: (issue) => (issue.code === 'invalid_type' ? 'must be { key: (payload) => string, concurrency }' : undefined) },
    )
    .optional(),
  batch: z
    .strictObject(
      { size: count(MAX_BATCH_SIZE), wait: duration.optional() },
      { error: (issue) => (issue.code === 'invalid_type' ? "must be { size, wait? }, e.g. { size: 100, wait: '1s' }" : undefined) },
    )
    .optional(),
  debounce: z
    .strictObject(
      { key: requiredFn('(payload) => string'), delay: requiredDuration("'5s'") },
      {
        error: (issue) =>
          issue.code === 'invalid_type' ? "must be { key: (payload) => string, delay }, e.g. { key: (p) => p.docId, delay: '5s' }" : undefined,
      },
    )
    .optional(),
  sandbox: z
    .union(
      [
        z.boolean(),
        z.strictObject({
          threads: count(10_000).optional(),
          resourceLimits: z
            .strictObject({
              maxOldGenerationSizeMb: z.number({ message: 'must be a number of MB' }).positive({ message: 'must be > 0' }).optional(),
              maxYoungGenerationSizeMb: z.number({ message: 'must be a number of MB' }).positive({ message: 'must be > 0' }).optional(),
              codeRangeSizeMb: z.number({ message: 'must be a number of MB' }).positive({ message: 'must be > 0' }).optional(),
              stackSizeMb: z.number({ message: 'must be a number of MB' }).positive({ message: 'must be > 0' }).optional(),
            })
            .optional(),
        }),
      ],
      { error: () => 'must be true, or { threads?, resourceLimits? }, e.g. { threads: 2, resourceLimits: { maxOldGenerationSizeMb: 256 } }' },
    )
    .optional(),
});

const backoffObjectSchema = z.strictObject({
  type: z.enum(['fixed', 'linear', 'exponential'], { message: "must be 'fixed', 'linear' or 'exponential'" }),
  delay: duration,
  max: duration.optional(),
  jitter: z.enum(['none', 'full', 'equal'], { message: "must be 'none', 'full' or 'equal'" }).optional(),
});

function firstIssue(className: string, error: z.ZodError, prefix: string[] = []): InvalidJobOptionsError {
  const issue = error.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    const key = [...prefix, ...issue.path.map(String), issue.keys[0]!].join('.');
    return new InvalidJobOptionsError(className, key, 'is not a known option; check its spelling against the @Job documentation');
  }
  const option = [...prefix, ...issue.path.map(String)].join('.') || '(options)';
  return new InvalidJobOptionsError(className, option, issue.message);
}

function parseBackoff(className: string, raw: unknown): BackoffStrategy | BackoffFunction {
  if (raw === undefined) return DEFAULT_BACKOFF;
  if (typeof raw === 'function') return raw as BackoffFunction;
  if (typeof raw !== 'object' || raw === null) {
    return fail(
      new InvalidJobOptionsError(
        className,
        'backoff',
        "must be { type: 'fixed' | 'linear' | 'exponential', delay, max?, jitter? } or (attempt, error) => Duration",
      ),
    );
  }
  const parsed = backoffObjectSchema.safeParse(raw);
  if (!parsed.success) throw firstIssue(className, parsed.error, ['backoff']);
  const { type, delay, max, jitter } = parsed.data;
  return { type, delayMs: toMs(delay), maxMs: max === undefined ? MAX_TIMER_MS : Math.min(toMs(max), MAX_TIMER_MS), jitter: jitter ?? 'none' };
}

function fail(error: Error): never {
  throw error;
}

/**
 * Validates one class's raw `@Job` options and applies the defaults. Throws
 * `InvalidJobOptionsError` naming the class and the option.
 */
export function parseJobOptions(jobClass: JobClass, raw: unknown): JobDefinition {
  const className = jobClass.name || '(anonymous class)';
  const parsed = jobOptionsSchema.safeParse(raw ?? {});
  if (!parsed.success) throw firstIssue(className, parsed.error);
  const o = parsed.data;
  if (o.debounce && o.idempotencyKey) {
    throw new InvalidJobOptionsError(
      className,
      'debounce',
      'cannot be combined with idempotencyKey: a debounced enqueue updates the queued job of its key; keep one of them',
    );
  }
  if (o.debounce && o.schedule !== undefined) {
    throw new InvalidJobOptionsError(className, 'debounce', 'cannot be combined with schedule: each cron slot is its own run; keep one of them');
  }
  if (o.batch && o.sandbox !== undefined && o.sandbox !== false) {
    throw new InvalidJobOptionsError(className, 'sandbox', 'cannot be combined with batch yet: a sandboxed handler runs one job at a time; keep one of them');
  }
  return {
    name: o.name ?? className,
    className,
    jobClass,
    queue: o.queue ?? 'default',
    payload: o.payload,
    maxAttempts: (o.retries ?? 3) + 1,
    backoff: parseBackoff(className, o.backoff),
    timeoutMs: o.timeout === undefined ? undefined : Math.min(toMs(o.timeout), MAX_TIMER_MS),
    priority: o.priority ?? 0,
    concurrency: o.concurrency ?? Infinity,
    idempotencyKey: o.idempotencyKey as ((payload: unknown) => string) | undefined,
    schedule: o.schedule,
    ...(o.globalConcurrency === undefined ? {} : { globalConcurrency: o.globalConcurrency }),
    ...(o.rateLimit === undefined
      ? {}
      : {
          rateLimit: {
            limit: o.rateLimit.limit,
            perMs: toMs(o.rateLimit.per),
            ...(o.rateLimit.key ? { key: o.rateLimit.key as (payload: unknown) => string } : {}),
          },
        }),
    ...(o.group === undefined ? {} : { group: { key: o.group.key as (payload: unknown) => string, concurrency: o.group.concurrency } }),
    ...(o.batch === undefined ? {} : { batch: { size: o.batch.size, waitMs: o.batch.wait === undefined ? 0 : Math.min(toMs(o.batch.wait), MAX_TIMER_MS) } }),
    ...(o.debounce === undefined
      ? {}
      : { debounce: { key: o.debounce.key as (payload: unknown) => string, delayMs: Math.min(toMs(o.debounce.delay), MAX_TIMER_MS) } }),
    ...(o.sandbox === undefined || o.sandbox === false ? {} : { sandbox: o.sandbox === true ? {} : sandboxDefinition(o.sandbox) }),
  };
}

function sandboxDefinition(o: { threads?: number | undefined; resourceLimits?: Record<string, number | undefined> | undefined }): SandboxJobDefinition {
  const limits = Object.fromEntries(Object.entries(o.resourceLimits ?? {}).filter(([, v]) => v !== undefined)) as SandboxResourceLimits;
  return {
    ...(o.threads === undefined ? {} : { threads: o.threads }),
    ...(Object.keys(limits).length === 0 ? {} : { resourceLimits: limits }),
  };
}
