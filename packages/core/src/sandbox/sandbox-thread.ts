import { Worker } from 'node:worker_threads';
import { SandboxCrashedError, SandboxModuleError } from '../support/errors.js';
import type { SandboxResourceLimits } from '../jobs/job-options.js';
import { adoptIntoRealm, fromWire, toWire, type FromThread, type ThreadData, type ToThread, type WireJob } from './wire.js';

/** What a run in a thread hears from it besides its end: `ctx` calls, step functions done, log entries. */
export interface ThreadRunListener {
  onMessage(message: Exclude<FromThread, { t: 'ready' | 'init-failed' | 'done' }>): void;
  /** The thread died or was terminated during the run: pending bridge work must end with `error`. */
  onGone(error: Error): void;
}

interface ActiveRun {
  runId: number;
  jobId: string;
  listener: ThreadRunListener;
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/** Marks a run's rejection as the end of a suspended run (the engine's `ctx` holds the suspension). */
export class ThreadRunSuspended extends Error {
  constructor() {
    super('The sandboxed run suspended');
    this.name = 'RunSuspension';
  }
}

let nextRunId = 0;

/**
 * One worker thread of the sandbox pool: started with the sandbox module, then running one job at a
 * time. A thread that exits, throws outside a handler or runs out of memory is dead: the run on it
 * fails with `SANDBOX_CRASHED` and the pool forgets the thread.
 */
export class SandboxThread {
  readonly worker: Worker;
  /** The worker's `threadId` (kept: the worker reports -1 once it has exited). */
  readonly threadId: number;
  /** Resolves once the sandbox module has built its container in the thread. */
  readonly ready: Promise<void>;
  /** Job name of the current run (for the pool's per-job cap). */
  jobName: string | undefined;
  private active: ActiveRun | undefined;
  private dead = false;
  /** The last error the thread reported before exiting (out of memory, an uncaught throw). */
  private lastError: Error | undefined;
  /** Set by `terminate`: why the engine ended the thread. */
  private endedBy: string | undefined;

  constructor(
    entry: URL,
    moduleHref: string,
    /** Threads are kept per set of limits (a worker's limits are fixed when it starts). */
    readonly limitsKey: string,
    limits: SandboxResourceLimits | undefined,
    private readonly onExit: (thread: SandboxThread, crash: Error | undefined) => void,
  ) {
    const data: ThreadData = { moduleHref };
    this.worker = new Worker(entry, { workerData: data, ...(limits ? { resourceLimits: limits } : {}) });
    // Idle threads must not keep the process alive: the engine's own timers do while it runs.
    this.worker.unref();
    this.threadId = this.worker.threadId;
    this.ready = new Promise<void>((resolve, reject) => {
      const onInit = (message: FromThread): void => {
        if (message.t === 'ready') resolve();
        else if (message.t === 'init-failed') reject(fromWire(message.error));
        else return;
        this.worker.off('message', onInit);
      };
      this.worker.on('message', onInit);
      this.worker.once('exit', () => reject(new SandboxModuleError(moduleHref, `ended its thread while loading (${this.describeEnd()})`)));
    });
    // The pool handles the rejection through `acquire`; an unused thread must not warn.
    this.ready.catch(() => {});
    this.worker.on('message', (message: FromThread) => this.onMessage(adoptIntoRealm(message)));
    this.worker.on('error', (err) => {
      this.lastError = err;
    });
    this.worker.on('exit', (code) => this.exited(code));
  }

  get busy(): boolean {
    return this.active !== undefined;
  }

  get alive(): boolean {
    return !this.dead;
  }

  /** Runs `job` in this thread; resolves with the handler's result, rejects with its error. */
  run(job: WireJob, payload: unknown, listener: ThreadRunListener): { runId: number; done: Promise<unknown> } {
    const runId = ++nextRunId;
    const done = new Promise<unknown>((resolve, reject) => {
      this.active = { runId, jobId: job.id, listener, resolve, reject };
    });
    this.post({ t: 'run', runId, job, payload });
    return { runId, done };
  }

  post(message: ToThread): void {
    if (!this.dead) this.worker.postMessage(message);
  }

  abort(runId: number, reason: unknown): void {
    if (this.active?.runId === runId) this.post({ t: 'abort', runId, reason: toWire(reason) });
  }

  /** Ends the thread (a run abandoned at its timeout or at shutdown, a pool closing): the run on it ends at once. */
  terminate(why: string): void {
    if (this.dead) return;
    this.endedBy = why;
    this.dead = true;
    const active = this.active;
    this.active = undefined;
    if (active) {
      const error = new SandboxCrashedError(active.jobId, `was terminated: ${why}`);
      active.listener.onGone(error);
      active.reject(error);
    }
    void this.worker.terminate();
  }

  private onMessage(message: FromThread): void {
    if (message.t === 'ready' || message.t === 'init-failed') return;
    const active = this.active;
    if (!active || active.runId !== message.runId) return;
    if (message.t !== 'done') return active.listener.onMessage(message);
    this.active = undefined;
    if (message.ok) active.resolve(message.value);
    else active.reject(message.suspended ? new ThreadRunSuspended() : fromWire(message.error));
  }

  private exited(code: number): void {
    const wasDead = this.dead;
    this.dead = true;
    const active = this.active;
    this.active = undefined;
    const crash = wasDead ? undefined : new Error(this.describeEnd(code));
    if (active) {
      const error = new SandboxCrashedError(active.jobId, this.describeEnd(code));
      active.listener.onGone(error);
      active.reject(error);
    }
    this.onExit(this, crash);
  }

  private describeEnd(code?: number): string {
    if (this.endedBy !== undefined) return `was terminated: ${this.endedBy}`;
    const err = this.lastError as (Error & { code?: string }) | undefined;
    if (err?.code === 'ERR_WORKER_OUT_OF_MEMORY') return `ran out of memory (its resourceLimits): ${err.message}`;
    if (err) return `threw outside the handler: ${err.message}`;
    return `exited with code ${code ?? '?'} (process.exit was called in the handler, or the thread ended)`;
  }
}
