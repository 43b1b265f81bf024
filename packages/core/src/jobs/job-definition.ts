import type { z } from 'zod';
import type { BackoffFunction, BackoffStrategy } from './backoff.js';
import type { JobClass } from './job-class.js';
import type { SandboxResourceLimits } from './job-options.js';

/** A job class's validated options with defaults applied: what the engine works from. */
export interface JobDefinition {
  readonly name: string;
  readonly className: string;
  readonly jobClass: JobClass;
  readonly queue: string;
  readonly payload?: z.ZodType;
  /** `retries + 1`. */
  readonly maxAttempts: number;
  readonly backoff: BackoffStrategy | BackoffFunction;
  readonly timeoutMs?: number;
  readonly priority: number;
  /** Most parallel runs in one engine; `Infinity` when unlimited. */
  readonly concurrency: number;
  readonly idempotencyKey?: (payload: unknown) => string;
  /** The raw `schedule` option; the cron module compiles it. */
  readonly schedule?: unknown;
  /** Running at once across every engine sharing the store. */
  readonly globalConcurrency?: number;
  readonly rateLimit?: { readonly limit: number; readonly perMs: number; readonly key?: (payload: unknown) => string };
  readonly group?: { readonly key: (payload: unknown) => string; readonly concurrency: number };
  readonly debounce?: { readonly key: (payload: unknown) => string; readonly delayMs: number };
  /** A batch handler's call size and how long its first job waits for more (`@Job({ batch })`). */
  readonly batch?: { readonly size: number; readonly waitMs: number };
  /** Present when the handler runs in a sandbox thread (`@Job({ sandbox })`). */
  readonly sandbox?: SandboxJobDefinition;
}

/** A job's sandbox settings after validation. */
export interface SandboxJobDefinition {
  /** Most runs in threads at once; undefined: the pool's size. */
  readonly threads?: number;
  readonly resourceLimits?: SandboxResourceLimits;
}
