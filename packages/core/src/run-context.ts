import type { Clock } from './clock.js';
import { toMs, type Duration } from './duration.js';
import {
  DuplicateStepError,
  InvalidArgumentError,
  NonDeterminismError,
  NotImplementedError,
  NotPlainDataError,
  TransactionsUnsupportedError,
} from './engine-errors.js';
import type { EnqueueOptions } from './enqueue-options.js';
import type { JobClass } from './job-class.js';
import type { JobContext } from './job-context.js';
import type { EnqueueResult, JobRecord, LeaseRef, StepKind, StepRecord } from './job-record.js';
import type { Logger } from './logger.js';
import { findPlainDataProblem } from './plain-data.js';
import type { JobStore } from './store.js';
import { RunSuspension } from './suspension.js';

/** The {@link JobContext} of one run. The runner reads `suspension` and `completedInTransaction` afterwards. */
export class RunContext implements JobContext {
  readonly jobId: string;
  readonly name: string;
  readonly attempt: number;
  readonly idempotencyKey?: string;
  readonly scheduledFor?: Date;
  readonly signal: AbortSignal;
  readonly log: Logger;

  /** Set when the run parked itself; the runner commits it. */
  suspension: RunSuspension | undefined;
  /** Set when `transaction` completed the job together with the handler's writes. */
  completedInTransaction = false;

  private readonly usedNames = new Set<string>();
  private transactionStarted = false;

  constructor(
    private readonly deps: { job: JobRecord; lease: LeaseRef; store: JobStore; clock: Clock; logger: Logger; signal: AbortSignal },
  ) {
    const { job } = deps;
    this.jobId = job.id;
    this.name = job.name;
    this.attempt = job.attempt;
    if (job.idempotencyKey !== undefined) this.idempotencyKey = job.idempotencyKey;
    if (job.scheduledFor !== undefined) this.scheduledFor = job.scheduledFor;
    this.signal = deps.signal;
    this.log = deps.logger;
  }

  async step<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
    const recorded = this.claimName(name, 'step');
    if (recorded?.status === 'completed') return recorded.result as T;
    if (typeof fn !== 'function') throw new InvalidArgumentError(`ctx.step("${name}")`, 'needs a function');
    const result = await fn();
    const problem = findPlainDataProblem(result);
    if (problem) throw new NotPlainDataError(`The result of step "${name}"`, problem.path, problem.reason);
    const now = this.deps.clock.now();
    const step: StepRecord = { name, kind: 'step', status: 'completed', at: now };
    if (result !== undefined) step.result = result;
    const stored = await this.deps.store.recordStep(this.deps.lease, step, now);
    // First write wins: a concurrent run that recorded it first decides the result.
    return stored.result as T;
  }

  sleep(name: string, duration: Duration): Promise<void> {
    let ms: number;
    try {
      ms = toMs(duration);
    } catch (err) {
      throw new InvalidArgumentError(`ctx.sleep("${name}") duration`, (err as Error).message);
    }
    return this.sleepUntil(name, new Date(this.deps.clock.now().getTime() + ms));
  }

  async sleepUntil(name: string, at: Date): Promise<void> {
    const recorded = this.claimName(name, 'sleep');
    if (!(at instanceof Date) || Number.isNaN(at.getTime())) throw new InvalidArgumentError(`ctx.sleepUntil("${name}")`, 'needs a valid Date');
    const now = this.deps.clock.now();
    // A recorded sleep keeps its first wake time: re-running the code before it must not push it back.
    const wakeAt = recorded?.wakeAt ?? at;
    if (wakeAt.getTime() <= now.getTime()) return;
    const step: StepRecord | undefined = recorded ? undefined : { name, kind: 'sleep', status: 'pending', wakeAt, at: now };
    const store = this.deps.store;
    this.suspend(
      new RunSuspension(`sleep "${name}"`, (lease, when) => store.sleep(lease, step ? { runAt: wakeAt, step, now: when } : { runAt: wakeAt, now: when }), wakeAt),
    );
  }

  enqueue<P>(_job: JobClass<P>, _payload: P, _opts?: EnqueueOptions): Promise<EnqueueResult> {
    return Promise.reject(new NotImplementedError('ctx.enqueue (child jobs)'));
  }

  async progress(value: number | Record<string, unknown>): Promise<void> {
    const problem = findPlainDataProblem(value);
    if (problem) throw new NotPlainDataError('Progress', problem.path, problem.reason);
    await this.deps.store.progress(this.deps.lease, value, this.deps.clock.now());
  }

  async transaction<T>(fn: (session?: unknown) => Promise<T>): Promise<T> {
    const { store, lease, clock } = this.deps;
    if (!store.withTransaction) throw new TransactionsUnsupportedError('ctx.transaction');
    if (this.transactionStarted) throw new InvalidArgumentError('ctx.transaction', 'it completes the job, so it can be used once per run');
    this.transactionStarted = true;
    const result = await store.withTransaction(async (session) => {
      const value = await fn(session);
      await store.complete(lease, { now: clock.now(), session });
      return value;
    });
    this.completedInTransaction = true;
    return result;
  }

  /** Ends the run through the runner's suspend path. @internal for durable waits (signals, children). */
  suspend(suspension: RunSuspension): never {
    this.suspension ??= suspension;
    throw suspension;
  }

  /** Checks a step name is usable in this run and returns its record from earlier runs, if any. */
  private claimName(name: string, kind: StepKind): StepRecord | undefined {
    if (typeof name !== 'string' || name.trim() === '') throw new InvalidArgumentError(`ctx.${kind} name`, 'must be a non-empty string');
    if (this.suspension) throw this.suspension;
    if (this.usedNames.has(name)) throw new DuplicateStepError(this.jobId, name);
    this.usedNames.add(name);
    const recorded = this.deps.job.steps.find((s) => s.name === name);
    if (recorded && recorded.kind !== kind) throw new NonDeterminismError(this.jobId, name, recorded.kind, kind);
    return recorded;
  }
}
