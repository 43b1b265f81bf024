import type { JobContext } from '../jobs/job-class.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import { JobNotRegisteredError } from '../support/errors.js';
import type { Logger } from '../support/logger.js';
import type { ChildEnqueueOptions, WaitForJobOptions, WaitForSignalOptions } from '../jobs/workflow-options.js';
import type { Duration } from '../support/duration.js';
import type { SandboxThread, ThreadRunListener } from './sandbox-thread.js';
import { fromWire, toWire, WIRE_ERROR_MARK, type FromThread, type WireError } from './wire.js';

/** The engine's `ctx` of the run, plus whether a call parked the run (set by the durable waits). */
export interface BridgedContext extends JobContext {
  readonly suspension: unknown;
}

/**
 * The engine's end of one sandboxed run: the thread's `ctx` calls are made on the engine's own
 * context of the run (so steps, sleeps, waits, child jobs and progress go through the same code,
 * the same lease and the same store as in-thread runs), answered with their results. A step's
 * function is run in the thread when the engine's `ctx.step` decides to execute it.
 */
export class SandboxBridge implements ThreadRunListener {
  private readonly fns = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private gone: Error | undefined;
  runId = 0;

  constructor(
    private readonly thread: SandboxThread,
    private readonly ctx: BridgedContext,
    private readonly registry: JobRegistry,
    private readonly log: Logger,
    private readonly onActivity?: () => void,
  ) {}

  onMessage(message: Exclude<FromThread, { t: 'ready' | 'init-failed' | 'done' }>): void {
    this.onActivity?.();
    switch (message.t) {
      case 'call':
        void this.answer(message.callId, message.method, message.args);
        return;
      case 'fn-done': {
        const pending = this.fns.get(message.fnId);
        if (!pending) return;
        this.fns.delete(message.fnId);
        if (message.ok) pending.resolve(message.value);
        else pending.reject(fromWire(message.error));
        return;
      }
      case 'log':
        this.log[message.level](reviveErrors(message.obj), message.msg);
        return;
    }
  }

  onGone(error: Error): void {
    this.gone = error;
    for (const pending of this.fns.values()) pending.reject(error);
    this.fns.clear();
  }

  /** Runs step function `fnId` in the thread (the engine's `ctx.step` executes the step). */
  private runFn(fnId: number): Promise<unknown> {
    if (this.gone) return Promise.reject(this.gone);
    return new Promise((resolve, reject) => {
      this.fns.set(fnId, { resolve, reject });
      this.thread.post({ t: 'fn', runId: this.runId, fnId });
    });
  }

  private async answer(callId: number, method: string, args: unknown[]): Promise<void> {
    const runId = this.runId;
    try {
      const value = await this.invoke(method, args);
      this.thread.post({ t: 'reply', runId, callId, ok: true, value });
    } catch (err) {
      const suspended = this.ctx.suspension !== undefined && err === this.ctx.suspension;
      this.thread.post({ t: 'reply', runId, callId, ok: false, error: toWire(err), suspended });
    }
  }

  private invoke(method: string, args: unknown[]): Promise<unknown> {
    const { ctx } = this;
    switch (method) {
      case 'step':
        return ctx.step(args[0] as string, () => this.runFn(args[1] as number));
      case 'patched':
        return ctx.patched(args[0] as string);
      case 'sleep':
        return ctx.sleep(args[0] as string, args[1] as Duration);
      case 'sleepUntil':
        return ctx.sleepUntil(args[0] as string, args[1] as Date);
      case 'enqueue': {
        const def = this.registry.byName(args[0] as string);
        if (!def) return Promise.reject(new JobNotRegisteredError(args[0] as string));
        return ctx.enqueue(def.jobClass, args[1], args[2] as ChildEnqueueOptions | undefined);
      }
      case 'waitForJob':
        return ctx.waitForJob(args[0] as string, args[1] as WaitForJobOptions | undefined);
      case 'waitForSignal':
        return ctx.waitForSignal(args[0] as string, args[1] as WaitForSignalOptions | undefined);
      case 'progress':
        return ctx.progress(args[0] as number);
      case 'dependencyResults':
        return ctx.dependencyResults();
      default:
        return Promise.reject(new Error(`sandbox: unknown ctx method ${method}`));
    }
  }
}

function reviveErrors(obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(obj)) {
    const marked = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[WIRE_ERROR_MARK] : undefined;
    out[key] = marked ? fromWire(marked as WireError) : value;
  }
  return out;
}
