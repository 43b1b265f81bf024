import { SandboxUnsupportedError } from '../support/errors.js';
import type { Duration } from '../support/duration.js';
import type { JobClass, JobContext } from '../jobs/job-class.js';
import { readJobOptions } from '../jobs/job-metadata.js';
import type { EnqueueResult } from '../store/job-record.js';
import type { ChildEnqueueOptions, WaitForJobOptions, WaitForSignalOptions } from '../jobs/workflow-options.js';
import type { Logger } from '../support/logger.js';
import { stepNesting } from '../workflow/step-nesting.js';
import { assertCloneable, toWire, WIRE_ERROR_MARK, type BridgeMethod, type FromThread, type WireJob } from './wire.js';

/** How a thread's context reaches the engine: its calls, the step functions it hands over, its logs. */
export interface ThreadLink {
  call(method: BridgeMethod, args: unknown[]): Promise<unknown>;
  post(message: FromThread): void;
}

/**
 * The {@link JobContext} a sandboxed handler gets inside its thread. Every durable method is a call
 * to the engine's own `ctx` of the run (see bridge.ts), so steps, sleeps, waits, child jobs,
 * progress and `patched` behave exactly as on the engine's thread; a step's function runs here,
 * when the engine asks for it. `signal` aborts when the engine's does.
 */
export class ThreadContext implements JobContext {
  readonly jobId: string;
  readonly name: string;
  readonly attempt: number;
  readonly idempotencyKey?: string;
  readonly scheduledFor?: Date;
  readonly log: Logger;
  readonly controller = new AbortController();
  /** Step functions handed to the engine, by id, until it has run them (or the step is answered). */
  readonly fns = new Map<number, { name: string; fn: () => unknown }>();
  private nextFn = 0;

  constructor(
    job: WireJob,
    private readonly link: ThreadLink,
    runId: number,
  ) {
    this.jobId = job.id;
    this.name = job.name;
    this.attempt = job.attempt;
    if (job.idempotencyKey !== undefined) this.idempotencyKey = job.idempotencyKey;
    if (job.scheduledFor !== undefined) this.scheduledFor = job.scheduledFor;
    this.log = new ThreadLogger(link, runId, {});
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  async step<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
    stepNesting.assertOutside(this, 'step', name);
    const fnId = ++this.nextFn;
    this.fns.set(fnId, { name, fn });
    try {
      return (await this.link.call('step', [name, fnId])) as T;
    } finally {
      this.fns.delete(fnId);
    }
  }

  /** Runs the function of step `fnId` (the engine decided it must execute) as the body of that step. */
  runFn(fnId: number): Promise<unknown> {
    const entry = this.fns.get(fnId);
    if (!entry) return Promise.reject(new Error(`sandbox: no step function ${fnId} in this run`));
    return stepNesting.run(this, entry.name, entry.fn).then((value) => {
      assertCloneable(`The result of step "${entry.name}"`, value);
      return value;
    });
  }

  dependencyResults<R = unknown>(): Promise<Record<string, R>> {
    return this.link.call('dependencyResults', []) as Promise<Record<string, R>>;
  }

  patched(changeId: string): Promise<boolean> {
    return this.link.call('patched', [changeId]) as Promise<boolean>;
  }

  async sleep(name: string, duration: Duration): Promise<void> {
    stepNesting.assertOutside(this, 'sleep', name);
    await this.link.call('sleep', [name, duration]);
  }

  async sleepUntil(name: string, at: Date): Promise<void> {
    stepNesting.assertOutside(this, 'sleep', name);
    await this.link.call('sleepUntil', [name, at]);
  }

  enqueue<P>(job: JobClass<P>, payload: P, opts?: ChildEnqueueOptions): Promise<EnqueueResult> {
    const jobName = jobNameOf(job);
    stepNesting.assertOutside(this, 'enqueue', opts?.step ?? `enqueue:${jobName}`);
    assertCloneable(`The payload of ctx.enqueue(${jobName})`, payload);
    return this.link.call('enqueue', opts === undefined ? [jobName, payload] : [jobName, payload, opts]) as Promise<EnqueueResult>;
  }

  waitForJob<R = unknown>(id: string, opts?: WaitForJobOptions): Promise<R>;
  waitForJob<R = unknown>(ids: readonly string[], opts?: WaitForJobOptions): Promise<R[]>;
  waitForJob(ids: string | readonly string[], opts?: WaitForJobOptions): Promise<unknown> {
    stepNesting.assertOutside(this, 'wait', opts?.step ?? 'waitForJob');
    return this.link.call('waitForJob', opts === undefined ? [ids] : [ids, opts]);
  }

  waitForSignal<T = unknown>(name: string, opts?: WaitForSignalOptions): Promise<T> {
    stepNesting.assertOutside(this, 'signal', opts?.step ?? `waitForSignal:${name}`);
    return this.link.call('waitForSignal', opts === undefined ? [name] : [name, opts]) as Promise<T>;
  }

  async progress(value: number | Record<string, unknown>): Promise<void> {
    assertCloneable('Progress', value);
    await this.link.call('progress', [value]);
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

/** Why wait tokens fail in a sandboxed handler (in a thread, and in-line alike): not bridged yet. */
export function waitTokensRefused(method: string): SandboxUnsupportedError {
  return new SandboxUnsupportedError(
    method,
    'wait tokens are not bridged to sandbox threads; create the token and wait for it in a job without sandbox, which enqueues the sandboxed work (ctx.enqueue)',
  );
}

/** Why `ctx.transaction` fails in a sandboxed handler (in a thread, and in-line alike). */
export function transactionRefused(): SandboxUnsupportedError {
  return new SandboxUnsupportedError(
    'ctx.transaction',
    "the store's session lives on the engine's thread and cannot cross to a sandbox thread. " +
      'Make the writes idempotent in a ctx.step, or move the transactional part to a job without sandbox (ctx.enqueue it)',
  );
}

/** The stored name of a job class loaded in this thread (its `@Job` name, else its class name). */
function jobNameOf(job: JobClass): string {
  const options = typeof job === 'function' ? readJobOptions(job) : undefined;
  if (!options && typeof job !== 'function') throw new SandboxUnsupportedError('ctx.enqueue', 'it needs a @Job class');
  return options?.name?.trim() || job.name;
}

/** `ctx.log` in a thread: entries go to the engine's logger for the run (which binds job id, name and attempt). */
class ThreadLogger implements Logger {
  constructor(
    private readonly link: ThreadLink,
    private readonly runId: number,
    private readonly bindings: Record<string, unknown>,
  ) {}

  debug(obj: Record<string, unknown>, msg?: string): void {
    this.write('debug', obj, msg);
  }
  info(obj: Record<string, unknown>, msg?: string): void {
    this.write('info', obj, msg);
  }
  warn(obj: Record<string, unknown>, msg?: string): void {
    this.write('warn', obj, msg);
  }
  error(obj: Record<string, unknown>, msg?: string): void {
    this.write('error', obj, msg);
  }
  child(bindings: Record<string, unknown>): Logger {
    return new ThreadLogger(this.link, this.runId, { ...this.bindings, ...bindings });
  }

  private write(level: 'debug' | 'info' | 'warn' | 'error', obj: Record<string, unknown>, msg?: string): void {
    const entry: Record<string, unknown> = {};
    for (const [key, value] of Object.entries({ ...this.bindings, ...obj })) {
      // An entry is best effort: what cannot cross is shown as text rather than lost with the line.
      if (value instanceof Error) entry[key] = { [WIRE_ERROR_MARK]: toWire(value) };
      else {
        try {
          assertCloneable('a log field', value);
          entry[key] = value;
        } catch {
          entry[key] = String(value);
        }
      }
    }
    this.link.post({ t: 'log', runId: this.runId, level, obj: entry, ...(msg === undefined ? {} : { msg }) });
  }
}
