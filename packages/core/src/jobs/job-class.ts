import type { Duration } from '../support/duration.js';
import type { EnqueueResult } from '../store/job-record.js';
import type { Logger } from '../support/logger.js';
import type { z } from 'zod';
import type {
  ChildEnqueueOptions,
  CreateWaitTokenOptions,
  WaitForJobOptions,
  WaitForSignalOptions,
  WaitForTokenOptions,
  WaitToken,
} from './workflow-options.js';

// A job class, its handler and the context its `run` receives are one contract: the context's
// `enqueue` takes a job class, whose handler takes the context. They share this file so that the
// types refer to each other without an import cycle.

/** What a job class's instances look like: a `run(payload, ctx)` method, or `runBatch(items, ctx)` for a `@Job({ batch })`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- an untyped handler accepts any payload
export type JobHandler<P = any> = RunHandler<P> | BatchHandler<P>;

/** A handler of one job at a time: `run(payload, ctx)`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- an untyped handler accepts any payload
export interface RunHandler<P = any> {
  run(payload: P, ctx: JobContext): unknown;
}

/** A batch handler (`@Job({ batch: { size, wait } })`): takes many due jobs of its name at once. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- an untyped handler accepts any payload
export interface BatchHandler<P = any> {
  /**
   * Returns one entry per item, in order: a value (that job completes with it) or an `Error`
   * (that job fails on its own: retried with its backoff, dead-lettered when out of attempts).
   * Throwing fails every item of the call.
   */
  runBatch(items: BatchItem<P>[], ctx: BatchContext): unknown;
}

/** One job of a batch handler's call. */
export interface BatchItem<P = unknown> {
  jobId: string;
  payload: P;
  /** 1-based, as `ctx.attempt`. */
  attempt: number;
}

/** What `runBatch(items, ctx)` receives besides the items. */
export interface BatchContext {
  /** The jobs' name. */
  readonly name: string;
  /** Aborts when every item's own signal has aborted (timeouts, lost leases, cancels, shutdown). */
  readonly signal: AbortSignal;
  readonly log: Logger;
}

/** A `@Job` class. `P` is the payload its `run` (or `runBatch`) accepts. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- an untyped job class accepts any payload
export type JobClass<P = any> = abstract new (...args: any[]) => JobHandler<P>;

/** The payload type of a job class: the first parameter of its `run`, or the items' payload of its `runBatch`. */
export type PayloadOf<C> = C extends abstract new (...args: any[]) => infer I ? HandlerPayload<I> : never;

/** The payload a handler takes (distributes over a union of handlers: `JobHandler<any>` gives `any`). */
type HandlerPayload<I> = I extends { run(payload: infer P, ...rest: any[]): unknown }
  ? P
  : I extends { runBatch(items: BatchItem<infer P>[], ...rest: any[]): unknown }
    ? P
    : never;

/** What a batch callback's `ctx.batch` holds: the batch's final counts and its failed members. */
export interface BatchSummary {
  id: string;
  total: number;
  completed: number;
  dead: number;
  cancelled: number;
  /** The members that are dead or cancelled when the callback runs. */
  failedJobIds: string[];
}

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
  /**
   * A batch callback's run (`onComplete`, `onSuccess`, `onFailure` of `loom.batches.create`): the
   * batch's final counts and the ids of its members that are dead or cancelled. Absent on other jobs.
   */
  readonly batch?: BatchSummary;
  /** Aborts at the job's timeout, when the lease is lost, or when the engine stops past its grace. */
  readonly signal: AbortSignal;
  /**
   * A child logger that binds the job id, name and attempt. The job also keeps the lines it
   * writes (a bounded tail, `JobRecord.logs`: `loom.jobs.get`, `loom jobs logs`, the dashboard).
   */
  readonly log: Logger;
  /**
   * Runs `fn` once and stores its result under `name`; later attempts return the stored result
   * without calling `fn`. The result must be plain data (`NOT_PLAIN_DATA`) of at most
   * `MAX_STEP_RESULT_BYTES` (1 MiB, `STEP_RESULT_TOO_LARGE`). A step that throws fails the attempt
   * (retried with backoff; its error shows on the job's step) and runs again next attempt.
   *
   * Workflow rules: a name may be used once per run (`DUPLICATE_STEP`), and every attempt must
   * reach its steps (`step`, `sleep`, `enqueue`, `waitForJob`, `waitForSignal`) in the same order
   * (`NON_DETERMINISM`, naming the recorded and the reached step). Branch on step results, never on
   * time, randomness or external reads outside steps. Steps do not nest: `fn` must not call `ctx`
   * workflow methods (`INVALID_ARGUMENT`).
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
  /**
   * Whether this run takes the code of change `changeId`, for changing a workflow while runs are in
   * flight: true for a run that reaches this call first under the new code, false for a run that
   * had gone past this point before (it recorded later steps under the old code). Recorded with the
   * run, so every later attempt gets the same answer. Adding the call shifts no step:
   *
   * ```ts
   * if (await ctx.patched('send-sms')) await ctx.step('sms', () => sms.send(order));
   * ```
   *
   * Once no run started before the change is left, the call and the old branch can go.
   */
  patched(changeId: string): Promise<boolean>;
  /**
   * Enqueues a child job (its `parentId` is this job), memoized as an `enqueue` step: a retried
   * parent gets the same child back and never enqueues twice. The child's idempotency key is
   * `opts.idempotencyKey`, else the child job's own `idempotencyKey(payload)`, else
   * `child:<parent id>:<step name>`. The step name defaults to `enqueue:<job name>#<n>`.
   */
  enqueue<P>(job: JobClass<P>, payload: P, opts?: ChildEnqueueOptions): Promise<EnqueueResult>;
  /**
   * The results of the jobs this one was enqueued to run after (`dependsOn`), by job id: each
   * completed dependency's result (`null` when it returned nothing). A dependency that did not
   * complete (it died or was cancelled and this job has `onDependencyFailure: 'run'`), or that
   * retention removed, is absent. `{}` for a job without dependencies.
   */
  dependencyResults<R = unknown>(): Promise<Record<string, R>>;
  /**
   * Durably waits until the job(s) have finished and returns their results: one result for an id,
   * an array in input order for an array (`null` for a job without a result). The run ends while
   * it waits (no worker is held) and resumes when the last one finishes. A dead job fails the wait
   * with `CHILD_FAILED` (its error in the message); `timeout` elapsing fails it with `WAIT_TIMEOUT`.
   * The outcome is a `wait` step (default name `waitForJob#<n>`). Results are final; a failure is
   * final once the handler catches it and goes on (later attempts then take the same path), while
   * an uncaught one is looked at again by the next attempt (e.g. after the dead child was replayed).
   */
  waitForJob<R = unknown>(id: string, opts?: WaitForJobOptions): Promise<R>;
  waitForJob<R = unknown>(ids: readonly string[], opts?: WaitForJobOptions): Promise<R[]>;
  /**
   * Durably waits for a signal sent with `loom.signal(jobId, name, data)` and returns its data.
   * A signal sent before the wait is stored on the job and taken at once; each signal is delivered
   * to exactly one wait, once (recorded as a `signal` step, default name `waitForSignal:<name>#<n>`).
   * `timeout` elapsing fails it with `WAIT_TIMEOUT` (final once caught, as for `waitForJob`).
   */
  waitForSignal<T = unknown>(name: string, opts?: WaitForSignalOptions): Promise<T>;
  /**
   * Makes a wait token for a person or another system to settle (`loom.tokens.complete(id, output)`,
   * `loom.tokens.reject(id, reason)`, `loom tokens complete ID`, or its signed `url`). Call it
   * inside a step, so a retried attempt gets the same token back:
   *
   * ```ts
   * const token = await ctx.step('approval-token', () => ctx.createWaitToken({ timeout: '3d', schema: Approval }));
   * await mailer.send(reviewer, token.url);
   * const decision = await ctx.waitForToken(token);
   * ```
   */
  createWaitToken<S extends z.ZodType = z.ZodType<unknown>>(options?: CreateWaitTokenOptions<S>): Promise<WaitToken<z.output<S>>>;
  /**
   * Durably waits until the token is settled and returns the output it was completed with. The run
   * ends while it waits (no worker is held) and resumes when the token is settled. A rejection
   * throws `TokenRejectedError` (`TOKEN_REJECTED`); the token's timeout throws `TokenTimeoutError`
   * (`TOKEN_TIMEOUT`), or returns its `default`. Recorded as a `signal` step (default name
   * `waitForToken#<n>`): every later attempt gets the same outcome.
   */
  waitForToken<T>(token: WaitToken<T>, opts?: WaitForTokenOptions): Promise<T>;
  /** Saves progress (plain data) on the job for operators to read. */
  progress(value: number | Record<string, unknown>): Promise<void>;
  /**
   * Runs `fn` in a store transaction that also completes the job: the handler's writes (made with
   * `session`) and the completion commit together, or neither does. Call it at most once, as the
   * last thing the handler does; the handler's return value is not stored when it is used.
   * Throws `TRANSACTIONS_UNSUPPORTED` on stores without transactions, and `SANDBOX_UNSUPPORTED` in a
   * sandboxed handler (`@Job({ sandbox })`: the store's session cannot cross to its thread).
   */
  transaction<T>(fn: (session?: unknown) => Promise<T>): Promise<T>;
}
