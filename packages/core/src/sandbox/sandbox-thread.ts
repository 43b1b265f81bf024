import { SandboxCrashedError, SandboxModuleError } from '../support/errors.js';
import type { SandboxResourceLimits } from '../jobs/job-options.js';
import type { SandboxChannel } from './channel.js';
import { ProcessChannel } from './process-channel.js';
import { ThreadChannel } from './thread-channel.js';
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
 * One runner of the sandbox pool (a worker thread, or a child process for a job with
 * `resourceLimits`: see {@link openChannel}): started with the sandbox module, then running one job
 * at a time. A runner that exits, throws outside a handler or runs out of memory is dead: the run
 * on it fails with `SANDBOX_CRASHED` and the pool forgets it.
 */
export class SandboxThread {
  readonly channel: SandboxChannel;
  /** The worker's `threadId`, or the child process's `pid`. */
  readonly threadId: number;
  /** Resolves once the sandbox module has built its container in the thread. */
  readonly ready: Promise<void>;
  /** Job name of the current run (for the pool's per-job cap). */
  jobName: string | undefined;
  private active: ActiveRun | undefined;
  private dead = false;
  /** Why the runner ended on its own, once it has. */
  private crash: string | undefined;
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
    this.channel = openChannel(entry, data, limits);
    this.threadId = this.channel.id;
    // First: the loading failure below reads the crash this records.
    this.channel.onExit((crash) => this.exited(crash));
    this.ready = new Promise<void>((resolve, reject) => {
      let loaded = false;
      this.channel.onMessage((message) => {
        if (loaded) return;
        if (message.t === 'ready') resolve();
        else if (message.t === 'init-failed') reject(fromWire(message.error));
        else return;
        loaded = true;
      });
      this.channel.onExit(() => reject(new SandboxModuleError(moduleHref, `ended its ${this.channel.kind} while loading (${this.describeEnd()})`)));
    });
    // The pool handles the rejection through `acquire`; an unused thread must not warn.
    this.ready.catch(() => {});
    this.channel.onMessage((message) => this.onMessage(adoptIntoRealm(message)));
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
    if (!this.dead) this.channel.post(message);
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
    this.channel.terminate();
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

  private exited(crash: string): void {
    const wasDead = this.dead;
    this.dead = true;
    if (!wasDead) this.crash = crash;
    const active = this.active;
    this.active = undefined;
    if (active) {
      const error = new SandboxCrashedError(active.jobId, this.describeEnd());
      active.listener.onGone(error);
      active.reject(error);
    }
    this.onExit(this, wasDead ? undefined : new Error(this.describeEnd()));
  }

  private describeEnd(): string {
    if (this.endedBy !== undefined) return `was terminated: ${this.endedBy}`;
    return this.crash ?? 'ended';
  }
}

/**
 * A runner for a job with `limits`. Jobs with `resourceLimits` get a child process whose V8 flags
 * hold them: Node 22 and 24 do not reliably end a worker thread at its heap limit (the thread
 * thrashes, or the whole process aborts: nodejs/node#47224), and the engine must outlive its
 * handlers. Without limits a thread is cheaper (no process start, shared memory of the engine).
 */
export function openChannel(entry: URL, data: ThreadData, limits: SandboxResourceLimits | undefined): SandboxChannel {
  return limits ? new ProcessChannel(entry, data, limits) : new ThreadChannel(entry, data);
}
