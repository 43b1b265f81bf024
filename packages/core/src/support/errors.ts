/**
 * Every error Loom raises is a {@link LoomError} with a stable `code`. Check errors with
 * `LoomError.is(err, 'LEASE_LOST')` rather than `instanceof`: two copies of the library (or jest
 * realms) break `instanceof`, a `Symbol.for` brand does not.
 */
import { toMs, type Duration } from './duration.js';

const BRAND = Symbol.for('@loom/core/LoomError');

/** The stable codes of Loom's errors. */
export type LoomErrorCode =
  | 'INVALID_JOB_OPTIONS'
  | 'DUPLICATE_JOB_NAME'
  | 'JOB_NOT_REGISTERED'
  | 'INVALID_JOB_CLASS'
  | 'INVALID_PAYLOAD'
  | 'INVALID_IDEMPOTENCY_KEY'
  | 'INVALID_ARGUMENT'
  | 'LEASE_LOST'
  | 'CANCELLED'
  | 'CHILD_CANCELLED'
  | 'JOB_NOT_FOUND'
  | 'JOB_TIMEOUT'
  | 'PERMANENT'
  | 'JOB_FAILED'
  | 'NOT_PLAIN_DATA'
  | 'STEP_RESULT_TOO_LARGE'
  | 'DUPLICATE_STEP'
  | 'NON_DETERMINISM'
  | 'WAIT_TIMEOUT'
  | 'CHILD_FAILED'
  | 'TOO_MANY_SIGNALS'
  | 'ENGINE_STOPPED'
  | 'ENGINE_STATE'
  | 'TRANSACTIONS_UNSUPPORTED'
  | 'INVALID_SCHEDULE'
  | 'SCHEDULE_NOT_FOUND'
  | 'STORE_ERROR'
  | 'STORE_UNREACHABLE'
  | 'JOB_TOO_LARGE'
  | 'OUTCOME_NOT_STORED'
  | 'RATE_LIMITED'
  | 'INVALID_FLOW_KEY'
  | 'INVALID_TRANSITION';

/** Base class of every Loom error: a stable `code`, a message that says what to do. */
export class LoomError extends Error {
  readonly code: LoomErrorCode;

  constructor(code: LoomErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
    Object.defineProperty(this, BRAND, { value: true, enumerable: false });
  }

  /** True when `value` is a Loom error (optionally with the given code), across library copies. */
  static is(value: unknown, code?: LoomErrorCode): value is LoomError {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as Record<symbol, unknown>)[BRAND] === true &&
      (code === undefined || (value as LoomError).code === code)
    );
  }
}

/**
 * Throw from a handler to skip the remaining retries: the job goes to the dead-letter collection
 * at once with this error.
 */
export class PermanentError extends LoomError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('PERMANENT', message, options);
  }
}

/**
 * Throw from a handler when the service it calls says "too many requests" (an HTTP 429): the job
 * goes back to the queue with its attempt given back, and no job of its name — or, with a keyed
 * `rateLimit`, of its rate-limit key — starts in any instance for `retryAfter`.
 *
 * ```ts
 * if (res.status === 429) throw new RateLimitedError(res.headers.get('retry-after') ? `${res.headers.get('retry-after')}s` : '30s');
 * ```
 */
export class RateLimitedError extends LoomError {
  /** How long starts are held, in ms. */
  readonly retryAfterMs: number;

  constructor(retryAfter: Duration, message?: string) {
    let ms: number;
    try {
      ms = toMs(retryAfter);
    } catch (err) {
      throw new LoomError('INVALID_ARGUMENT', `RateLimitedError: retryAfter ${(err as Error).message}`, { cause: err });
    }
    super('RATE_LIMITED', message ?? `Rate limited: no job of this name starts for ${ms} ms`);
    this.retryAfterMs = ms;
  }
}

/**
 * A fenced store operation found that the job's lease token no longer matches: another worker
 * took the job over (the lease expired), so this worker must stop touching it. Nothing changed.
 */
export class LeaseLostError extends LoomError {
  constructor(readonly jobId: string, detail = 'its lease expired and another worker may have taken it over') {
    super('LEASE_LOST', `Job ${jobId}: lease lost (${detail}); this worker's write was refused and nothing changed`);
  }
}

/**
 * Why a heartbeat was refused although the job still runs under its token: the lease had already
 * run out. Its concurrency slot may have gone to another run meanwhile, so the run must end.
 */
export const LEASE_EXPIRED_BEFORE_HEARTBEAT = 'it had run out before this heartbeat arrived (the worker stalled, e.g. was stopped); another run may hold its slot';

/** A handler ran past its `timeout`; `ctx.signal` was aborted and the attempt failed. */
export class JobTimeoutError extends LoomError {
  constructor(readonly jobId: string, readonly timeoutMs: number) {
    super('JOB_TIMEOUT', `Job ${jobId} timed out after ${timeoutMs} ms; raise the job's \`timeout\` option or make the handler honour ctx.signal`);
  }
}

/** A payload failed its job's schema or is not plain data. `path` names the offending field. */
export class InvalidPayloadError extends LoomError {
  constructor(readonly jobName: string, readonly path: string, detail: string, options?: { cause?: unknown }) {
    super('INVALID_PAYLOAD', `Invalid payload for job "${jobName}" at ${path || '(root)'}: ${detail}`, options);
  }
}

/** Bad `@Job(...)` options, named by class and option; raised when the engine is created. */
export class InvalidJobOptionsError extends LoomError {
  constructor(readonly className: string, readonly option: string, detail: string) {
    super('INVALID_JOB_OPTIONS', `@Job on class ${className}: option "${option}" ${detail}`);
  }
}

/**
 * The job was cancelled (`loom.jobs.cancel`). It is the reason `ctx.signal` aborts with in the
 * run of a cancelled job, and what a store answers when the lease holder of a job whose cancel was
 * requested tries to write anything but a lease extension or the cancel itself (nothing changed).
 */
export class CancelledError extends LoomError {
  constructor(readonly jobId: string, readonly reason?: string, detail = 'the run was aborted and its outcome is discarded') {
    super('CANCELLED', `Job ${jobId} was cancelled${reason ? ` (${reason})` : ''}: ${detail}`);
  }
}
