import type { Duration } from '../support/duration.js';
import type { JobClass, JobContext } from '../jobs/job-class.js';
import type { EnqueueResult } from '../store/job-record.js';
import type { ChildEnqueueOptions, WaitForJobOptions, WaitForSignalOptions } from '../jobs/workflow-options.js';
import type { Logger } from '../support/logger.js';
import { transactionRefused, waitTokensRefused } from './thread-context.js';
import { assertCloneable } from './wire.js';

/**
 * `ctx` of a sandboxed job run in-line (`Loom.create({ sandbox: 'inline' })`): the engine's context
 * of the run, with the limits a thread would impose (step results and child payloads must clone,
 * `ctx.transaction` is refused), so a test in-line catches what would fail in a thread.
 */
export class InlineContext implements JobContext {
  constructor(private readonly ctx: JobContext) {}

  get jobId(): string {
    return this.ctx.jobId;
  }
  get name(): string {
    return this.ctx.name;
  }
  get attempt(): number {
    return this.ctx.attempt;
  }
  get idempotencyKey(): string | undefined {
    return this.ctx.idempotencyKey;
  }
  get scheduledFor(): Date | undefined {
    return this.ctx.scheduledFor;
  }
  get signal(): AbortSignal {
    return this.ctx.signal;
  }
  get log(): Logger {
    return this.ctx.log;
  }

  step<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
    if (typeof fn !== 'function') return this.ctx.step(name, fn);
    return this.ctx.step(name, async () => {
      const value = await fn();
      assertCloneable(`The result of step "${name}"`, value);
      return value;
    });
  }
  dependencyResults<R = unknown>(): Promise<Record<string, R>> {
    return this.ctx.dependencyResults<R>();
  }
  patched(changeId: string): Promise<boolean> {
    return this.ctx.patched(changeId);
  }
  sleep(name: string, duration: Duration): Promise<void> {
    return this.ctx.sleep(name, duration);
  }
  sleepUntil(name: string, at: Date): Promise<void> {
    return this.ctx.sleepUntil(name, at);
  }
  enqueue<P>(job: JobClass<P>, payload: P, opts?: ChildEnqueueOptions): Promise<EnqueueResult> {
    assertCloneable(`The payload of ctx.enqueue(${job?.name})`, payload);
    return this.ctx.enqueue(job, payload, opts);
  }
  waitForJob<R = unknown>(id: string, opts?: WaitForJobOptions): Promise<R>;
  waitForJob<R = unknown>(ids: readonly string[], opts?: WaitForJobOptions): Promise<R[]>;
  waitForJob(ids: string | readonly string[], opts?: WaitForJobOptions): Promise<unknown> {
    return this.ctx.waitForJob(ids as string, opts);
  }
  waitForSignal<T = unknown>(name: string, opts?: WaitForSignalOptions): Promise<T> {
    return this.ctx.waitForSignal<T>(name, opts);
  }
  progress(value: number | Record<string, unknown>): Promise<void> {
    return this.ctx.progress(value);
  }
  transaction<T>(_fn: (session?: unknown) => Promise<T>): Promise<T> {
    return Promise.reject(transactionRefused());
  }
  createWaitToken(): Promise<never> {
    return Promise.reject(waitTokensRefused('ctx.createWaitToken'));
  }
  waitForToken(): Promise<never> {
    return Promise.reject(waitTokensRefused('ctx.waitForToken'));
  }
}
