import type { Duration } from './duration.js';
import type { EnqueueResult } from './job-record.js';
import type { JobClass } from './job-class.js';
import type { EnqueueOptions } from './enqueue-options.js';
import type { Logger } from './logger.js';

/** What a handler's `run(payload, ctx)` receives: the job's identity and its durable tools. */
export interface JobContext {
  readonly jobId: string;
  /** The job's stored name. */
  readonly name: string;
  /** 1-based; sleeps and graceful releases do not use up attempts. */
  readonly attempt: number;
  readonly idempotencyKey?: string;
  /** Cron runs: the fire time this run is for. */
  readonly scheduledFor?: Date;
  /** Aborts at the job's timeout, when the lease is lost, or when the engine stops past its grace. */
  readonly signal: AbortSignal;
  /** A child logger that binds the job id, name and attempt. */
  readonly log: Logger;
  /**
   * Runs `fn` once and stores its result (plain data) under `name`; later attempts return the
   * stored result without calling `fn`. A name may be used once per run.
   */
  step<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
  /**
   * Durable sleep: the run ends here and the job leaves the worker (the attempt is given back);
   * the next run, after `duration`, passes this point at once. Code before it runs again, so put
   * side effects in steps.
   */
  sleep(name: string, duration: Duration): Promise<void>;
  /** Durable sleep until `at`; see {@link JobContext.sleep}. */
  sleepUntil(name: string, at: Date): Promise<void>;
  /** Enqueues a child job (durable workflows; not available yet: throws `NOT_IMPLEMENTED`). */
  enqueue<P>(job: JobClass<P>, payload: P, opts?: EnqueueOptions): Promise<EnqueueResult>;
  /** Saves progress (plain data) on the job for operators to read. */
  progress(value: number | Record<string, unknown>): Promise<void>;
  /**
   * Runs `fn` in a store transaction that also completes the job: the handler's writes (made with
   * `session`) and the completion commit together, or neither does. Call it at most once, as the
   * last thing the handler does; the handler's return value is not stored when it is used.
   * Throws `TRANSACTIONS_UNSUPPORTED` on stores without transactions.
   */
  transaction<T>(fn: (session?: unknown) => Promise<T>): Promise<T>;
}
