import type { z } from 'zod';
import type { BackoffFunction, BackoffJitter, BackoffType } from './backoff.js';
import type { ScheduleOptions } from './schedule-options-schema.js';
import type { Duration } from '../support/duration.js';
import type { ResourceLimits } from 'node:worker_threads';

/** A built-in retry backoff, as written in `@Job({ backoff })`. */
export interface BackoffOptions {
  type: BackoffType;
  /** The first delay (fixed: every delay; linear: grows by it; exponential: doubles from it). */
  delay: Duration;
  /** No delay is longer. @default 2^31-1 ms (about 24.8 days) */
  max?: Duration;
  /** @default 'none' */
  jitter?: BackoffJitter;
}

/** The payload type a job options object implies: the schema's output, or `any` without a schema. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- without a schema the payload is what the handler's `run` declares
export type SchemaPayload<S> = S extends z.ZodType ? z.output<S> : any;

/** The options of `@Job(...)`, validated when the engine is created. */
export interface JobOptions<S extends z.ZodType | undefined = z.ZodType | undefined> {
  /** Stable name stored with every job. @default the class name */
  name?: string;
  /** @default 'default' */
  queue?: string;
  /** zod schema checked at enqueue (refused, nothing stored) and before each run (dead letter, no retry). */
  payload?: S;
  /** Retries after the first attempt. @default 3 */
  retries?: number;
  /** Delay between attempts. @default exponential from 1s, max 1h, full jitter */
  backoff?: BackoffOptions | BackoffFunction;
  /** `ctx.signal` aborts after this long and the attempt fails with `JobTimeoutError`. */
  timeout?: Duration;
  /** Higher runs first. @default 0 */
  priority?: number;
  /** Most parallel runs of this job in one engine instance. @default unlimited (engine concurrency) */
  concurrency?: number;
  /** Business identity of a payload; a taken key makes enqueue return the existing job. */
  idempotencyKey?: (payload: SchemaPayload<S>) => string;
  /** Run on a cron schedule: an expression, or `{ cron, timezone, payload, catchUp, overlap }`. */
  schedule?: ScheduleOptions;
  /**
   * At most `limit` starts in any window of `per`, across every instance sharing the store; with
   * `key`, per key (e.g. per tenant). A job held back stays `queued` and burns no attempt.
   */
  rateLimit?: RateLimitOptions<SchemaPayload<S>>;
  /** At most this many running at once, across every instance sharing the store. */
  globalConcurrency?: number;
  /**
   * At most `concurrency` running at once per `key(payload)`, across every instance; keys take
   * turns, so a key with 10,000 queued jobs does not delay one with a single job.
   */
  group?: GroupOptions<SchemaPayload<S>>;
  /**
   * An enqueue while a job with the same `key(payload)` is still queued (not yet started)
   * replaces its payload and moves its start to now + `delay`, returning the same id: five
   * enqueues inside the delay make one run, with the last payload.
   */
  debounce?: DebounceOptions<SchemaPayload<S>>;
  /**
   * Runs the handler in a pool of worker threads instead of the engine's thread, so a handler that
   * computes for seconds, runs out of memory, calls `process.exit` or never returns cannot stall
   * heartbeats or stop the engine. The class is built inside the thread by the engine's sandbox
   * module (`Loom.create({ sandbox: { module } })`); payloads, results and `ctx` values cross as
   * structured clones (`NOT_CLONEABLE` otherwise), and `ctx.transaction` is refused
   * (`SANDBOX_UNSUPPORTED`). `true` takes the defaults.
   */
  sandbox?: boolean | SandboxJobOptions;
  /**
   * A batch handler: the class defines `runBatch(items, ctx)` instead of `run`, and the engine
   * hands it up to `size` due jobs of this name at once, or what it has when `wait` (default `0`:
   * what one claim found) has passed since the first. Each job keeps its own lease, attempts,
   * retries, dead letter and flow limits; a call's items count as one run of the engine's
   * `concurrency`.
   */
  batch?: BatchOptions;
}

/** `@Job({ batch })`. */
export interface BatchOptions {
  /** Most jobs per call (1 to 1,000). */
  size: number;
  /** How long the first job of a call waits for more to fill it, e.g. `'1s'`. Default: no wait. */
  wait?: Duration;
}

/** `@Job({ rateLimit })`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as `SchemaPayload`: an untyped job's `key` takes its payload as declared
export interface RateLimitOptions<P = any> {
  /** Starts allowed per window (1 to 10,000). */
  limit: number;
  /** The window, e.g. `'1s'`, `'1m'` (a sliding window: a start counts for `per` after it). */
  per: Duration;
  /** A limit per key instead of one for the whole job name. */
  key?: (payload: P) => string;
}

/** `@Job({ group })`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as `SchemaPayload`: an untyped job's `key` takes its payload as declared
export interface GroupOptions<P = any> {
  key: (payload: P) => string;
  /** Running at once per key (1 to 10,000). */
  concurrency: number;
}

/** `@Job({ debounce })`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as `SchemaPayload`: an untyped job's `key` takes its payload as declared
export interface DebounceOptions<P = any> {
  key: (payload: P) => string;
  /** How long after the last enqueue with a key its job starts. */
  delay: Duration;
}

/**
 * `@Job({ sandbox: { ... } })`: how a sandboxed job's runs use the engine's pool of threads.
 * `sandbox: true` takes every default.
 */
export interface SandboxJobOptions {
  /**
   * Most runs of this job in threads at once in one engine (a run over it waits for a thread).
   * @default the engine's pool size (`Loom.create({ sandbox: { threads } })`)
   */
  threads?: number;
  /**
   * V8 limits for the runs of this job. A job with limits runs in a child process of its own
   * (kept for the next run, like a thread) started with the matching V8 flags
   * (`--max-old-space-size`, `--max-semi-space-size` = a third of `maxYoungGenerationSizeMb`,
   * `--stack-size`; `codeRangeSizeMb` has no flag and is not applied): Node 22 and 24 do not
   * reliably end a worker thread at its heap limit, and the engine must outlive the handler. A run
   * that exceeds `maxOldGenerationSizeMb` ends its process and fails with `SANDBOX_CRASHED`.
   * @default none: the job runs in a worker thread of the engine's process
   */
  resourceLimits?: SandboxResourceLimits;
}

/** The `resourceLimits` of a sandboxed job, named as `worker_threads` names them (sizes in MB). */
export type SandboxResourceLimits = Pick<ResourceLimits, 'maxOldGenerationSizeMb' | 'maxYoungGenerationSizeMb' | 'codeRangeSizeMb' | 'stackSizeMb'>;
