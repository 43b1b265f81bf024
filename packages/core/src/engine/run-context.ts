import type { z } from 'zod';
import type { Clock } from '../support/clock.js';
import { patched } from '../workflow/patches.js';
import { toMs, type Duration } from '../support/duration.js';
import { InvalidArgumentError, NotPlainDataError, TransactionsUnsupportedError } from '../support/errors.js';
import type { BatchSummary, JobClass, JobContext } from '../jobs/job-class.js';
import type { LazyAbort } from '../support/lazy-abort.js';
import type { EnqueueResult, JobRecord, StepKind, StepRecord } from '../store/job-record.js';
import type { Logger } from '../support/logger.js';
import { findPlainDataProblem } from '../support/plain-data.js';
import type { JobStore } from '../store/store.js';
import type { RunLease } from './lease.js';
import type { EventBus, JobEventInfo } from './events.js';
import type { RunTelemetry } from '../observability/telemetry.js';
import { RunSuspension } from '../workflow/run-suspension.js';
import { enqueueChild, waitForJobs } from '../workflow/child-jobs.js';
import type { RunScope, WorkflowServices } from '../workflow/run-scope.js';
import { waitForSignal } from '../workflow/signals.js';
import { createWaitToken, waitForToken } from '../workflow/wait-tokens.js';
import { recordStepFailure } from '../workflow/step-failure.js';
import { StepBudget } from '../workflow/step-limits.js';
import { StepLog } from '../workflow/step-log.js';
import { stepNesting } from '../workflow/step-nesting.js';
import { WaitOutcomes } from '../workflow/step-outcome.js';
import type {
  ChildEnqueueOptions,
  CreateWaitTokenOptions,
  WaitForJobOptions,
  WaitForSignalOptions,
  WaitForTokenOptions,
  WaitToken,
} from '../jobs/workflow-options.js';

/** What a {@link RunContext} reads of its run (the runner's `JobRun`). */
export interface RunOfContext {
  readonly job: JobRecord;
  readonly lease: RunLease;
  /** Made into `ctx.signal` only if the handler reads it. */
  readonly abort: LazyAbort;
  /** Puts each executed step in a span of its own, under the attempt's. */
  readonly telemetry: RunTelemetry;
  /** For `job:progress`. */
  readonly info: JobEventInfo;
}

/** What every run's context shares: made once per engine. */
export interface RunContextServices {
  store: JobStore;
  clock: Clock;
  workflow: WorkflowServices;
  events: EventBus;
}

/** The {@link JobContext} of one run. The runner reads `suspension` and `completedInTransaction` afterwards. */
export class RunContext implements JobContext {
  readonly jobId: string;
  readonly name: string;
  readonly attempt: number;
  readonly idempotencyKey?: string;
  readonly scheduledFor?: Date;
  readonly batch?: BatchSummary;
  readonly log: Logger;

  /** Set when the run parked itself; the runner commits it. */
  suspension: RunSuspension | undefined;
  /** Set when `transaction` completed the job together with the handler's writes. */
  completedInTransaction = false;
  /** This attempt created or waited for a wait token: when the job ends, the runner ends its pending tokens. */
  usedWaitTokens = false;

  /** Built on first use of steps, sleeps, child jobs or signals (see {@link scope}). */
  private lazyScope: RunScope | undefined;
  private transactionStarted = false;

  constructor(
    /** The run this is the context of: its job, lease, `ctx.signal`'s controller, telemetry and event info. */
    private readonly run: RunOfContext,
    private readonly services: RunContextServices,
    logger: Logger,
    /** A batch callback's batch (read by the runner before the run). */
    batch?: BatchSummary,
  ) {
    const { job } = run;
    this.jobId = job.id;
    this.name = job.name;
    this.attempt = job.attempt;
    if (job.idempotencyKey !== undefined) this.idempotencyKey = job.idempotencyKey;
    if (job.scheduledFor !== undefined) this.scheduledFor = job.scheduledFor;
    if (batch !== undefined) this.batch = batch;
    this.log = logger;
  }

  /**
   * The workflow state of this run. Made on first use: most jobs use no workflow feature, and its
   * maps and closures were a fifth of what a short job allocated.
   */
  private get scope(): RunScope {
    return (this.lazyScope ??= this.buildScope());
  }

  private get steps(): StepLog {
    return this.scope.steps;
  }

  private buildScope(): RunScope {
    const { run, services } = this;
    const { job } = run;
    const steps = new StepLog(job.id, job.steps);
    const record = (step: StepRecord): Promise<StepRecord> => services.store.recordStep(run.lease.ref, steps.stamp(step), services.clock.now());
    return {
      jobId: job.id,
      attempt: job.attempt,
      lease: run.lease.ref,
      store: services.store,
      clock: services.clock,
      log: this.log,
      services: services.workflow,
      steps,
      budget: new StepBudget(job.steps),
      outcomes: new WaitOutcomes(record),
      reach: (name, kind) => this.claimName(name, kind),
      moveOn: () => this.moveOn(),
      record,
      suspend: (suspension) => this.suspend(suspension),
    };
  }

  get signal(): AbortSignal {
    return this.run.abort.signal;
  }

  async step<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
    const recorded = this.claimName(name, 'step');
    if (recorded?.status === 'completed') return recorded.result as T;
    if (typeof fn !== 'function') throw new InvalidArgumentError(`ctx.step("${name}")`, 'needs a function');
    await this.moveOn();
    let result: T;
    try {
      result = await this.run.telemetry.step(name, () => stepNesting.run(this, name, fn));
      this.scope.budget.admit(`The result of step "${name}"`, name, result);
    } catch (err) {
      await recordStepFailure(this.scope, name, 'step', err);
      throw err;
    }
    const step: StepRecord = { name, kind: 'step', status: 'completed', at: this.services.clock.now() };
    if (result !== undefined) step.result = result;
    const stored = await this.scope.record(step);
    // First write wins: a concurrent run that recorded it first decides the result.
    return stored.result as T;
  }

  patched(changeId: string): Promise<boolean> {
    if (this.suspension) throw this.suspension;
    return patched(this.scope, changeId);
  }

  sleep(name: string, duration: Duration): Promise<void> {
    let ms: number;
    try {
      ms = toMs(duration);
    } catch (err) {
      throw new InvalidArgumentError(`ctx.sleep("${name}") duration`, (err as Error).message);
    }
    return this.sleepUntil(name, new Date(this.services.clock.now().getTime() + ms));
  }

  async sleepUntil(name: string, at: Date): Promise<void> {
    const recorded = this.claimName(name, 'sleep');
    if (!(at instanceof Date) || Number.isNaN(at.getTime())) throw new InvalidArgumentError(`ctx.sleepUntil("${name}")`, 'needs a valid Date');
    await this.moveOn();
    const now = this.services.clock.now();
    // A recorded sleep keeps its first wake time: re-running the code before it must not push it back.
    const wakeAt = recorded?.wakeAt ?? at;
    if (wakeAt.getTime() <= now.getTime()) {
      // Passing a sleep marks it done, so `loom.getJob` shows the workflow past it.
      if (recorded?.status === 'pending') await this.scope.record({ name, kind: 'sleep', status: 'completed', wakeAt, at: now });
      return;
    }
    const step: StepRecord | undefined = recorded ? undefined : this.steps.stamp({ name, kind: 'sleep', status: 'pending', wakeAt, at: now });
    const store = this.services.store;
    this.suspend(
      new RunSuspension(
        `sleep "${name}"`,
        (lease, when) => store.sleep(lease, step ? { runAt: wakeAt, step, now: when } : { runAt: wakeAt, now: when }),
        wakeAt,
      ),
    );
  }

  enqueue<P>(job: JobClass<P>, payload: P, opts?: ChildEnqueueOptions): Promise<EnqueueResult> {
    return enqueueChild(this.scope, job, payload, opts);
  }

  async dependencyResults<R = unknown>(): Promise<Record<string, R>> {
    const ids = this.run.job.dependsOn ?? [];
    const jobs = await Promise.all(ids.map((id) => this.services.store.getJob(id)));
    const results: Record<string, R> = {};
    for (const job of jobs) if (job?.status === 'completed') results[job.id] = (job.result ?? null) as R;
    return results;
  }

  waitForJob<R = unknown>(id: string, opts?: WaitForJobOptions): Promise<R>;
  waitForJob<R = unknown>(ids: readonly string[], opts?: WaitForJobOptions): Promise<R[]>;
  waitForJob(ids: string | readonly string[], opts?: WaitForJobOptions): Promise<unknown> {
    return waitForJobs(this.scope, ids, opts);
  }

  waitForSignal<T = unknown>(name: string, opts?: WaitForSignalOptions): Promise<T> {
    return waitForSignal(this.scope, name, opts) as Promise<T>;
  }

  createWaitToken<S extends z.ZodType = z.ZodType<unknown>>(options?: CreateWaitTokenOptions<S>): Promise<WaitToken<z.output<S>>> {
    if (this.suspension) throw this.suspension;
    this.usedWaitTokens = true;
    return createWaitToken(this.scope, options) as Promise<WaitToken<z.output<S>>>;
  }

  waitForToken<T>(token: WaitToken<T>, opts?: WaitForTokenOptions): Promise<T> {
    this.usedWaitTokens = true;
    return waitForToken(this.scope, token, opts) as Promise<T>;
  }

  async progress(value: number | Record<string, unknown>): Promise<void> {
    const problem = findPlainDataProblem(value);
    if (problem) throw new NotPlainDataError('Progress', problem.path, problem.reason);
    const { run, services } = this;
    await services.store.progress(run.lease.ref, value, services.clock.now());
    services.events.emit('job:progress', { job: run.info, progress: value });
  }

  /**
   * The handler's writes and the job's completion commit together. The completion is the
   * transaction's last write (fenced: a run whose lease was taken over commits nothing); the lease
   * is renewed before and not extended during the transaction, since a heartbeat landing after its
   * snapshot would make the driver re-run `fn` (see `RunLease.holding`). `fn` runs once per attempt
   * when it finishes within one lease.
   */
  async transaction<T>(fn: (session?: unknown) => Promise<T>): Promise<T> {
    const { store, clock } = this.services;
    const { lease } = this.run;
    if (!store.withTransaction) throw new TransactionsUnsupportedError('ctx.transaction');
    if (this.transactionStarted) throw new InvalidArgumentError('ctx.transaction', 'it completes the job, so it can be used once per run');
    this.transactionStarted = true;
    const withTransaction = store.withTransaction.bind(store);
    const result = await lease.holding(() =>
      withTransaction(async (session) => {
        const value = await fn(session);
        await store.complete(lease.ref, { now: clock.now(), session });
        return value;
      }),
    );
    this.completedInTransaction = true;
    return result;
  }

  /** Bytes of step results this run added to the job's record (for the size check before `complete`). */
  get stepBytesAdded(): number {
    return this.lazyScope?.budget.added ?? 0;
  }

  /** Ends the run through the runner's suspend path. @internal for durable waits (signals, children). */
  suspend(suspension: RunSuspension): never {
    this.suspension ??= suspension;
    throw suspension;
  }

  /**
   * Called by the runner when the handler returned: wait failures it caught become final, so the
   * finished job's steps say what happened. Best effort: the job completes either way. Nothing to
   * wait for (undefined) when the run used no workflow feature, as most do.
   */
  finishSteps(): Promise<void> | undefined {
    return this.lazyScope ? this.finishWaits() : undefined;
  }

  private async finishWaits(): Promise<void> {
    try {
      await this.moveOn();
    } catch (err) {
      this.log.warn({ err, jobId: this.jobId }, `Job ${this.jobId}: could not mark the waits the handler caught as final; the job completes all the same`);
    }
  }

  /** Makes wait failures this run caught final before it records anything after them. */
  private async moveOn(): Promise<void> {
    const outcomes = this.lazyScope?.outcomes;
    if (outcomes?.pending) await outcomes.moveOn();
  }

  /** Checks a step name is usable in this run and returns its record from earlier runs, if any. */
  private claimName(name: string, kind: StepKind): StepRecord | undefined {
    if (typeof name !== 'string' || name.trim() === '') throw new InvalidArgumentError(`ctx.${kind} name`, 'must be a non-empty string');
    if (this.suspension) throw this.suspension;
    stepNesting.assertOutside(this, kind, name);
    return this.steps.reach(name, kind);
  }
}
