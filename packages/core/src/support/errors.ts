// Over 500 lines by design: issue 27 asks for one error module per package, so every core error
// class and its code are in this one file (test/errors.test.ts checks the codes are distinct).
/**
 * Every error Loom raises is a {@link LoomError} with a stable `code`; core's error classes all
 * live in this module, each with a code of its own (a subclass that refines another, such as
 * StepOrderError, keeps its parent's; test/errors.test.ts checks it). Check errors with
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
  | 'STORE_TIMEOUT'
  | 'STORE_UNREACHABLE'
  | 'SHARD_KEY_MISMATCH'
  | 'JOB_TOO_LARGE'
  | 'PAYLOAD_TOO_LARGE'
  | 'OUTCOME_NOT_STORED'
  | 'RATE_LIMITED'
  | 'INVALID_FLOW_KEY'
  | 'INVALID_TRANSITION'
  | 'NOT_CLONEABLE'
  | 'SANDBOX_CRASHED'
  | 'SANDBOX_MODULE'
  | 'SANDBOX_UNSUPPORTED'
  | 'BATCH_NOT_FOUND'
  | 'INVALID_BATCH'
  | 'TOKEN_REJECTED'
  | 'TOKEN_TIMEOUT'
  | 'TOKEN_CANCELLED'
  | 'INVALID_TOKEN_OUTPUT'
  | 'WAIT_TOKEN_NOT_FOUND'
  | 'RUN_RECORD_MISMATCH'
  | 'INVALID_DEPENDENCIES'
  | 'DEPENDENCY_FAILED';

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

// ---- Thrown by handlers --------------------------------------------------------------------------

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

// ---- Job classes and their options (Loom.create) -------------------------------------------------

/** Bad `@Job(...)` options, named by class and option; raised when the engine is created. */
export class InvalidJobOptionsError extends LoomError {
  constructor(
    readonly className: string,
    readonly option: string,
    detail: string,
  ) {
    super('INVALID_JOB_OPTIONS', `@Job on class ${className}: option "${option}" ${detail}`);
  }
}

/** Two `@Job` classes claim one job name; raised by `Loom.create`. */
export class DuplicateJobNameError extends LoomError {
  constructor(
    readonly jobName: string,
    readonly firstClass: string,
    readonly secondClass: string,
  ) {
    super('DUPLICATE_JOB_NAME', `Job name "${jobName}" is used by both ${firstClass} and ${secondClass}; give one of them another \`name\` in @Job({ name })`);
  }
}

/** A class handed to the engine is not a usable job (no `@Job`, or no `run` method). */
export class InvalidJobClassError extends LoomError {
  constructor(
    readonly className: string,
    detail: string,
  ) {
    super('INVALID_JOB_CLASS', `Job class ${className} ${detail}`);
  }
}

/** A job class this engine does not know was used (enqueue, lookup). */
export class JobNotRegisteredError extends LoomError {
  constructor(readonly className: string) {
    super(
      'JOB_NOT_REGISTERED',
      `Job class ${className} is not registered with this Loom: decorate it with @Job and, if you pass \`jobs\` to Loom.create, list it there`,
    );
  }
}

// ---- Bad input: refused, nothing changed ---------------------------------------------------------

/** A bad argument to an engine method or option. */
export class InvalidArgumentError extends LoomError {
  constructor(
    readonly argument: string,
    detail: string,
  ) {
    super('INVALID_ARGUMENT', `Invalid ${argument}: ${detail}`);
  }
}

/** A payload failed its job's schema or is not plain data. `path` names the offending field. */
export class InvalidPayloadError extends LoomError {
  constructor(
    readonly jobName: string,
    readonly path: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super('INVALID_PAYLOAD', `Invalid payload for job "${jobName}" at ${path || '(root)'}: ${detail}`, options);
  }
}

/** An idempotency key that is not a non-empty string (objects are refused: that is how operator injection starts). */
export class InvalidIdempotencyKeyError extends LoomError {
  constructor(
    readonly jobName: string,
    detail: string,
  ) {
    super('INVALID_IDEMPOTENCY_KEY', `Invalid idempotency key for job "${jobName}": ${detail}; use a non-empty string of business identity`);
  }
}

/**
 * A `rateLimit.key`, `group.key` or `debounce.key` function threw or did not return a non-empty
 * string: the enqueue is refused and nothing is stored.
 */
export class InvalidFlowKeyError extends LoomError {
  constructor(
    readonly jobName: string,
    readonly option: 'rateLimit.key' | 'group.key' | 'debounce.key',
    detail: string,
  ) {
    super(
      'INVALID_FLOW_KEY',
      `Job "${jobName}": its ${option} function ${detail}; it must return a non-empty string (at most 1024 characters). Nothing was enqueued`,
    );
  }
}

/** A value the store must keep (step result, progress) is not plain data. */
export class NotPlainDataError extends LoomError {
  constructor(
    readonly what: string,
    readonly path: string,
    detail: string,
  ) {
    super(
      'NOT_PLAIN_DATA',
      `${what} is not plain data at ${path || '(root)'}: ${detail}; return plain objects, arrays, strings, numbers, booleans, null or Date`,
    );
  }
}

/** The store has no transactions, but `{ session }` or `ctx.transaction` asked for one. */
export class TransactionsUnsupportedError extends LoomError {
  constructor(what: string) {
    super(
      'TRANSACTIONS_UNSUPPORTED',
      `${what} needs a store with transactions (store.withTransaction), and this store has none; use MongoStore on a replica set, or drop the transaction`,
    );
  }
}

/** No job has the id given to `loom.jobs.cancel`, `retry` or `remove` (it never existed, or was removed). */
export class JobNotFoundError extends LoomError {
  constructor(readonly jobId: string) {
    super('JOB_NOT_FOUND', `No job has id ${JSON.stringify(jobId)}: check the id (\`loom.jobs.list\` finds jobs), or it was removed`);
  }
}

/** No batch has the id given to `loom.batches.get` through a tool that needs one, or a callback's batch is gone. */
export class BatchNotFoundError extends LoomError {
  constructor(readonly batchId: string) {
    super('BATCH_NOT_FOUND', `No batch has id ${JSON.stringify(batchId)}: check the id (\`loom.batches.create\` returned it)`);
  }
}

/**
 * `loom.batches.create` was given something it cannot store: not an object, a member or callback
 * without a registered job class, or a member with an idempotency key or a debounced job. Nothing
 * was stored.
 */
export class InvalidBatchError extends LoomError {
  constructor(detail: string) {
    super('INVALID_BATCH', `loom.batches.create: ${detail}; nothing was stored`);
  }
}

/** `loom.schedules.pause/resume` named a schedule this engine does not know. */
export class ScheduleNotFoundError extends LoomError {
  constructor(
    readonly scheduleName: string,
    known: readonly string[],
  ) {
    super(
      'SCHEDULE_NOT_FOUND',
      `No schedule named "${scheduleName}" in this engine; known schedules: ${known.length > 0 ? known.join(', ') : '(none)'}. ` +
        'A schedule is named after its job (the @Job name option, or the class name).',
    );
  }
}

// ---- Runs and their leases -----------------------------------------------------------------------

/**
 * A fenced store operation found that the job's lease token no longer matches: another worker
 * took the job over (the lease expired), so this worker must stop touching it. Nothing changed.
 */
export class LeaseLostError extends LoomError {
  constructor(
    readonly jobId: string,
    detail = 'its lease expired and another worker may have taken it over',
  ) {
    super('LEASE_LOST', `Job ${jobId}: lease lost (${detail}); this worker's write was refused and nothing changed`);
  }
}

/**
 * Why a heartbeat was refused although the job still runs under its token: the lease had already
 * run out. Its concurrency slot may have gone to another run meanwhile, so the run must end.
 */
export const LEASE_EXPIRED_BEFORE_HEARTBEAT =
  'it had run out before this heartbeat arrived (the worker stalled, e.g. was stopped); another run may hold its slot';

/** A handler ran past its `timeout`; `ctx.signal` was aborted and the attempt failed. */
export class JobTimeoutError extends LoomError {
  constructor(
    readonly jobId: string,
    readonly timeoutMs: number,
  ) {
    super('JOB_TIMEOUT', `Job ${jobId} timed out after ${timeoutMs} ms; raise the job's \`timeout\` option or make the handler honour ctx.signal`);
  }
}

/**
 * The job was cancelled (`loom.jobs.cancel`). It is the reason `ctx.signal` aborts with in the
 * run of a cancelled job, and what a store answers when the lease holder of a job whose cancel was
 * requested tries to write anything but a lease extension or the cancel itself (nothing changed).
 */
export class CancelledError extends LoomError {
  constructor(
    readonly jobId: string,
    readonly reason?: string,
    detail = 'the run was aborted and its outcome is discarded',
  ) {
    super('CANCELLED', `Job ${jobId} was cancelled${reason ? ` (${reason})` : ''}: ${detail}`);
  }
}

/** The reason `ctx.signal` aborts when the engine stops and the run outlives `shutdownGrace`. */
export class EngineStoppedError extends LoomError {
  constructor(readonly jobId: string) {
    super('ENGINE_STOPPED', `Job ${jobId}: the engine stopped and the run outlived shutdownGrace; the job was released for another worker`);
  }
}

/** A handler threw something that is not an `Error` (a string, undefined, an object); this carries it. */
export class JobFailedError extends LoomError {
  constructor(
    message: string,
    readonly thrown: unknown,
  ) {
    super('JOB_FAILED', message);
  }
}

/**
 * A job whose stored record would pass the store's document limit: its payload, steps, errors,
 * signals and result together. Return less from the handler (store large results elsewhere and
 * return a reference), or keep less in steps.
 */
export class JobTooLargeError extends LoomError {
  constructor(
    readonly jobId: string,
    detail: string,
  ) {
    super('JOB_TOO_LARGE', `Job ${jobId}: ${detail}; store large data elsewhere (a bucket, a collection of your own) and keep a reference in the job`);
  }
}

/**
 * A payload (at enqueue) or a result (at completion) over the store's `maxPayloadSize`, measured as
 * BSON: refused, nothing stored. Pass a reference to data kept elsewhere, or raise the store's
 * `maxPayloadSize` (MongoStore keeps values over its `offloadThreshold` in GridFS, up to that limit).
 */
export class PayloadTooLargeError extends LoomError {
  constructor(
    /** What was refused, e.g. `the payload of job "report"` or `the result of job 65f…`. */
    readonly subject: string,
    /** Its size in bytes (BSON, or the plain-data estimate of it). */
    readonly size: number,
    /** The store's `maxPayloadSize` in bytes. */
    readonly limit: number,
  ) {
    super(
      'PAYLOAD_TOO_LARGE',
      `${subject} is ${size} bytes serialized, over the store's maxPayloadSize of ${limit} bytes; nothing was stored. Store large data elsewhere (a bucket, a collection of your own) and pass a reference, or raise the store's maxPayloadSize`,
    );
  }
}

/** The store refused an outcome write for good (not a lost lease, not a transient error): the attempt fails with this. */
export class OutcomeNotStoredError extends LoomError {
  constructor(
    readonly jobId: string,
    operation: string,
    cause: Error,
  ) {
    super('OUTCOME_NOT_STORED', `Job ${jobId}: the store refused to ${operation} it: ${cause.message}`, { cause });
  }
}

/**
 * A store call that did not answer in time (`STORE_TIMEOUT`). The call may still complete later, so
 * an outcome write that timed out is not retried: it may land late, or the job runs again.
 */
export class StoreTimeoutError extends LoomError {
  constructor(operation: string, ms: number) {
    super('STORE_TIMEOUT', `store.${operation} did not answer within ${ms} ms; the engine stopped waiting for it`);
  }
}

/** An engine method was called in a state where it cannot work (e.g. `start` after `stop`). */
export class EngineStateError extends LoomError {
  constructor(detail: string) {
    super('ENGINE_STATE', detail);
  }
}

// ---- Workflows -----------------------------------------------------------------------------------

/** One step name used twice in one run: steps are memoized by name, so names must be unique. */
export class DuplicateStepError extends LoomError {
  constructor(
    readonly jobId: string,
    readonly stepName: string,
  ) {
    super('DUPLICATE_STEP', `Job ${jobId}: step name "${stepName}" is used twice in one run; give every ctx.step / ctx.sleep its own name`);
  }
}

/** A replayed run reached a recorded step of another kind under the same name. */
export class NonDeterminismError extends LoomError {
  constructor(
    readonly jobId: string,
    readonly stepName: string,
    recorded: string,
    requested: string,
  ) {
    super(
      'NON_DETERMINISM',
      `Job ${jobId}: "${stepName}" was recorded as a ${recorded} but this run uses it as a ${requested}; a handler must reach its steps the same way on every attempt`,
    );
  }
}

/**
 * A replay reached its steps in another order than the recorded history: the handler's code (or
 * the data it branches on outside steps) changed between attempts. It is a {@link NonDeterminismError}
 * (code `NON_DETERMINISM`) that names the recorded and the reached step.
 */
export class StepOrderError extends NonDeterminismError {
  constructor(
    jobId: string,
    position: number,
    expected: { name: string; kind: string } | undefined,
    actual: { name: string; kind: string },
    recordedAt?: number,
  ) {
    super(jobId, actual.name, expected?.kind ?? actual.kind, actual.kind);
    const where = `step #${position + 1}`;
    this.message = expected
      ? `Job ${jobId}: replay diverged at ${where}: the history recorded ${describeStep(expected)} there, but this run reached ${describeStep(actual)}; ` +
        'a handler must reach its steps in the same order on every attempt (keep branching on step results, never on time or randomness outside steps)'
      : `Job ${jobId}: replay diverged: this run reached ${describeStep(actual)} as ${where}, but the history recorded it as step #${(recordedAt ?? 0) + 1}; ` +
        'a handler must reach its steps in the same order on every attempt';
  }
}

function describeStep(step: { name: string; kind: string }): string {
  return `${step.kind} "${step.name}"`;
}

/** A step result (or signal data, or fan-in of child results) is over {@link MAX_STEP_RESULT_BYTES}. */
export class StepResultTooLargeError extends LoomError {
  constructor(
    readonly stepName: string,
    detail: string,
  ) {
    super('STEP_RESULT_TOO_LARGE', `${detail}; store large data elsewhere (a bucket, a collection) and return a reference from step "${stepName}"`);
  }
}

/**
 * `ctx.waitForJob` or `ctx.waitForSignal` reached its timeout. Once a handler catches it and goes
 * on, it is final: later attempts get the same error at the same step and take the same path.
 */
export class WaitTimeoutError extends LoomError {
  constructor(
    readonly stepName: string,
    message: string,
  ) {
    super('WAIT_TIMEOUT', message);
  }
}

/**
 * A job awaited with `ctx.waitForJob` is dead (it failed permanently or ran out of attempts). Catch
 * it to compensate (final from then on), or let it fail the parent's attempt (the next attempt
 * looks again, so replaying the dead child and then the parent can still succeed).
 */
export class ChildFailedError extends LoomError {
  constructor(
    readonly stepName: string,
    readonly childId: string,
    message: string,
  ) {
    super('CHILD_FAILED', message);
  }
}

/**
 * A job awaited with `ctx.waitForJob` was cancelled (`loom.jobs.cancel`). Like {@link ChildFailedError}:
 * catch it to go on without the child (final from then on), or let it fail the parent's attempt.
 */
export class ChildCancelledError extends LoomError {
  constructor(
    readonly stepName: string,
    readonly childId: string,
    message: string,
  ) {
    super('CHILD_CANCELLED', message);
  }
}

/**
 * A store tried a transition that the lifecycle table (`LIFECYCLE` in `store/lifecycle.ts`) does
 * not allow from the job's status. This is a bug in the store, not in its caller: the store decides
 * which transition a write makes, and must only make one the table allows. Nothing changed.
 */
export class InvalidTransitionError extends LoomError {
  constructor(
    readonly jobId: string,
    readonly transition: string,
    readonly status: string,
    /** The statuses the table allows `transition` from. */
    allowedFrom: readonly string[],
  ) {
    super(
      'INVALID_TRANSITION',
      `Job ${jobId}: the store tried the transition "${transition}" from status "${status}", which the lifecycle table ` +
        `(LIFECYCLE in @loom/core) allows only from ${allowedFrom.join(', ') || 'no status'}; nothing changed. ` +
        'This is a bug in the store: please report it',
    );
  }
}

/**
 * A signal was refused because the job already holds `held` signals, the most a job may hold
 * (`MAX_PENDING_SIGNALS`); nothing was stored.
 */
export class TooManySignalsError extends LoomError {
  constructor(
    readonly jobId: string,
    readonly signalName: string,
    held: number,
  ) {
    super(
      'TOO_MANY_SIGNALS',
      `Job ${jobId}: signal "${signalName}" was refused and nothing was stored: the job already holds ${held} signals ` +
        '(MAX_PENDING_SIGNALS) that no run has taken yet. Let the job consume them with ctx.waitForSignal before sending more, ' +
        'or send one signal carrying a batch',
    );
  }
}

// ---- Sandboxed handlers (`@Job({ sandbox })`) ------------------------------------------------------

/**
 * A value that crosses between the engine and a sandboxed handler's thread (a result, a step
 * result, a child payload, progress) cannot be copied by the structured clone algorithm: a
 * function, a symbol, a promise, a class instance holding one of those. `path` names the field.
 */
export class NotCloneableError extends LoomError {
  constructor(
    readonly what: string,
    readonly path: string,
    detail: string,
  ) {
    super(
      'NOT_CLONEABLE',
      `${what} cannot cross to or from the sandbox thread at ${path || '(root)'}: ${detail}; ` +
        'a sandboxed handler passes values as structured clones: return plain objects, arrays, strings, numbers, booleans, null or Date',
    );
  }
}

/**
 * The thread (or, for a job with `resourceLimits`, the process) running a sandboxed handler died
 * before the handler settled: it called `process.exit`, ran out of its `resourceLimits` (heap), or
 * threw outside the handler (a timer callback). The attempt fails and retries as usual; the engine
 * replaces the thread or process.
 */
export class SandboxCrashedError extends LoomError {
  constructor(
    readonly jobId: string,
    detail: string,
  ) {
    super(
      'SANDBOX_CRASHED',
      `Job ${jobId}: its sandbox thread or process ${detail}; the attempt failed and it was replaced. ` +
        "If it ran out of memory, raise @Job({ sandbox: { resourceLimits } }) or process less at once; don't call process.exit in a handler",
    );
  }
}

/**
 * The sandbox module (`Loom.create({ sandbox: { module } })`) could not give a thread the job's
 * class: it failed to load, its default export is not a container factory, or the job class is not
 * among the classes it loads.
 */
export class SandboxModuleError extends LoomError {
  constructor(
    readonly module: string,
    detail: string,
  ) {
    super(
      'SANDBOX_MODULE',
      `Sandbox module ${module} ${detail}. Its default export must be \`async function createContainer(): Promise<Container>\` ` +
        '(or a function (jobClass) => instance), and the module must import every sandboxed @Job class',
    );
  }
}

/** A `ctx` method that cannot work across the sandbox's thread boundary (`ctx.transaction`: a store session stays in the engine's thread). */
export class SandboxUnsupportedError extends LoomError {
  constructor(
    readonly method: string,
    detail: string,
  ) {
    super('SANDBOX_UNSUPPORTED', `${method} is not available in a sandboxed handler: ${detail}`);
  }
}

// ---- Wait tokens and run records ---------------------------------------------------------------

/**
 * `ctx.waitForToken`: the token was rejected (`loom.tokens.reject`, `loom tokens reject`, the
 * reject button of a token link). Final: every later attempt of the run gets the same error at the
 * same step, so catch it to take the "no" branch.
 */
export class TokenRejectedError extends LoomError {
  constructor(
    readonly tokenId: string,
    readonly reason: string | undefined,
    readonly stepName: string,
  ) {
    super(
      'TOKEN_REJECTED',
      `Wait token ${tokenId} was rejected${reason === undefined ? '' : `: ${reason}`}; catch TokenRejectedError around ctx.waitForToken to handle a rejection`,
    );
  }
}

/**
 * `ctx.waitForToken`: nobody completed or rejected the token before its timeout, and it has no
 * `default`. Final, as {@link TokenRejectedError}; give `createWaitToken({ default })` to go on
 * with a value instead.
 */
export class TokenTimeoutError extends LoomError {
  constructor(
    readonly tokenId: string,
    readonly timeoutAt: Date,
    readonly stepName: string,
  ) {
    super(
      'TOKEN_TIMEOUT',
      `Wait token ${tokenId} timed out at ${timeoutAt.toISOString()} without being completed or rejected; ` +
        'catch TokenTimeoutError, or give createWaitToken a `default` to go on with',
    );
  }
}

/**
 * `ctx.waitForToken`: the token was cancelled because its job ended (cancelled, dead, completed)
 * while it was pending; the job was then retried or replayed, and this run waits for it again.
 * A cancelled token never resumes anything: make a new one, e.g. `loom.jobs.fork(id, { fromStep })`
 * from the step that created the token.
 */
export class TokenCancelledError extends LoomError {
  constructor(
    readonly tokenId: string,
    readonly reason: string | undefined,
  ) {
    super(
      'TOKEN_CANCELLED',
      `Wait token ${tokenId} was cancelled${reason === undefined ? '' : ` (${reason})`}; it can no longer be completed. ` +
        'Fork the job from the step that created the token (loom.jobs.fork(id, { fromStep })) to wait for a new one',
    );
  }
}

/**
 * `loom.tokens.complete`: the output does not match the token's schema (or is not plain data).
 * Nothing changed: the token is still pending, so complete it again with a valid output.
 */
export class InvalidTokenOutputError extends LoomError {
  constructor(
    readonly tokenId: string,
    readonly path: string,
    detail: string,
  ) {
    super(
      'INVALID_TOKEN_OUTPUT',
      `Wait token ${tokenId}: the output${path === '' ? '' : ` at ${path}`} is refused: ${detail}; nothing changed, send a valid output`,
    );
  }
}

/** `loom.tokens.complete` / `reject` / `get`: no wait token has this id (a typo, or another store). */
export class WaitTokenNotFoundError extends LoomError {
  constructor(readonly tokenId: string) {
    super('WAIT_TOKEN_NOT_FOUND', `No wait token has the id ${tokenId}; check the id (a token is made by ctx.createWaitToken in a run of this store)`);
  }
}

/**
 * `replayRun` (`@loom/testing`) was given a run record (`loom jobs export`) that is not a run of
 * this job class, or not a run record of a format version it reads. Nothing ran.
 */
export class RunRecordMismatchError extends LoomError {
  constructor(
    readonly expected: string,
    readonly found: string,
  ) {
    super('RUN_RECORD_MISMATCH', `The run record is ${found}, not ${expected}; nothing was replayed. Replay it against the job class that made it`);
  }
}

// ---- Dependencies (dependsOn, flows.add) ------------------------------------------------------------

/**
 * An enqueue with dependencies (`dependsOn`, `loom.flows.add`) named a job that does not exist, a
 * node that is not in the flow, or made a cycle; nothing was stored.
 */
export class InvalidDependenciesError extends LoomError {
  constructor(
    /** What was wrong, e.g. `unknown job ids: a, b` or `a cycle: prices -> report -> prices`. */
    readonly problem: string,
  ) {
    super(
      'INVALID_DEPENDENCIES',
      `The dependencies were refused and nothing was stored: ${problem}. Depend only on ids returned by enqueue (or on node names of the ` +
        'same flow), and make sure no job depends on itself through others',
    );
  }
}

/**
 * A job's dependency died or was cancelled and its `onDependencyFailure` is `'fail'` (the
 * default): the job was dead-lettered with this error instead of running. Replay it with
 * `loom.jobs.retry` once the dependency is fixed, or enqueue it with `onDependencyFailure: 'run'`.
 */
export class DependencyFailedError extends LoomError {
  constructor(
    readonly jobId: string,
    readonly dependencyId: string,
    dependencyStatus: string,
  ) {
    super(
      'DEPENDENCY_FAILED',
      `Job ${jobId} did not run: its dependency ${dependencyId} is ${dependencyStatus}. Retry the dependency and then this job ` +
        "(loom.jobs.retry), or enqueue it with onDependencyFailure: 'run' to run it anyway",
    );
  }
}
