import type { Logger } from '../support/logger.js';
import type { SandboxResourceLimits } from '../jobs/job-options.js';
import { SandboxThread } from './sandbox-thread.js';

/** What a run asks the pool for: a thread with its job's limits, within its job's cap. */
export interface ThreadRequest {
  jobName: string;
  /** Most threads this job may hold at once. */
  cap: number;
  limits: SandboxResourceLimits | undefined;
}

interface Waiter extends ThreadRequest {
  key: string;
  resolve(thread: SandboxThread): void;
  reject(error: Error): void;
}

/**
 * The compiled thread entry. Running from TypeScript sources (ts-jest, tsx) this module is a `.ts`
 * file whose sibling `thread-entry.js` does not exist: the thread then starts from the package's
 * compiled `dist/` (build first), which a worker can load without a TypeScript loader.
 */
export function threadEntry(): URL {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return new URL('./thread-entry.js', here);
  return new URL('../../dist/sandbox/thread-entry.js', here);
}

/**
 * The engine's one pool of sandbox threads, at most `size` alive. A thread runs one job at a time
 * and is kept for the next run with the same `resourceLimits`; when the pool is full, an idle
 * thread with other limits is ended to make room, else the run waits (first come, first served).
 * A thread that dies is forgotten and a new one started when a run needs it.
 */
export class SandboxPool {
  private readonly threads = new Set<SandboxThread>();
  private readonly waiters: Waiter[] = [];
  private readonly busyByJob = new Map<string, number>();
  private closed = false;

  constructor(
    private readonly deps: {
      moduleHref: string;
      size: number;
      logger: Logger;
      entry?: URL;
      /** A thread died on its own (exit, out of memory, uncaught throw): for the engine's log and events. */
      onCrash?: (thread: SandboxThread, error: Error) => void;
    },
  ) {}

  /** Threads alive (starting, idle or busy). */
  get size(): number {
    return this.threads.size;
  }

  /** A thread for one run, started and ready; give it back with {@link release}. */
  acquire(request: ThreadRequest): { thread: Promise<SandboxThread>; cancel(error: Error): void } {
    const key = JSON.stringify(request.limits ?? {});
    let waiter: Waiter | undefined;
    const thread = new Promise<SandboxThread>((resolve, reject) => {
      waiter = { ...request, key, resolve, reject };
    });
    const w = waiter!;
    if (!this.tryServe(w)) this.waiters.push(w);
    return {
      thread,
      cancel: (error) => {
        const i = this.waiters.indexOf(w);
        if (i >= 0) {
          this.waiters.splice(i, 1);
          w.reject(error);
        }
      },
    };
  }

  /** Gives back a thread after its run; a dead one is already forgotten. */
  release(thread: SandboxThread): void {
    if (thread.alive) this.unmark(thread);
    else this.forget(thread);
    this.serveWaiters();
  }

  /** Ends every thread; runs still waiting fail with `error`. */
  close(error: Error): void {
    this.closed = true;
    for (const w of this.waiters.splice(0)) w.reject(error);
    for (const thread of this.threads) thread.terminate('the engine stopped');
    this.threads.clear();
  }

  private tryServe(w: Waiter): boolean {
    if ((this.busyByJob.get(w.jobName) ?? 0) >= w.cap) return false;
    let thread: SandboxThread | undefined;
    for (const t of this.threads) if (t.limitsKey === w.key && t.jobName === undefined && t.alive) thread = t;
    if (!thread && this.threads.size >= this.deps.size) {
      // Full: an idle thread with other limits makes room.
      const idle = [...this.threads].find((t) => t.jobName === undefined);
      if (!idle) return false;
      this.threads.delete(idle);
      idle.terminate('its place went to a thread with other resourceLimits');
    }
    thread ??= this.start(w.key, w.limits);
    thread.jobName = w.jobName;
    this.busyByJob.set(w.jobName, (this.busyByJob.get(w.jobName) ?? 0) + 1);
    const taken = thread;
    taken.ready.then(
      () => w.resolve(taken),
      (err: Error) => {
        this.forget(taken);
        taken.terminate('its sandbox module failed');
        w.reject(err);
      },
    );
    return true;
  }

  private start(key: string, limits: SandboxResourceLimits | undefined): SandboxThread {
    const thread = new SandboxThread(this.deps.entry ?? threadEntry(), this.deps.moduleHref, key, limits, (t, crash) => {
      this.forget(t);
      if (crash) this.deps.onCrash?.(t, crash);
      this.serveWaiters();
    });
    this.threads.add(thread);
    return thread;
  }

  private forget(thread: SandboxThread): void {
    if (this.threads.delete(thread)) this.unmark(thread);
  }

  private unmark(thread: SandboxThread): void {
    const name = thread.jobName;
    if (name === undefined) return;
    thread.jobName = undefined;
    const n = (this.busyByJob.get(name) ?? 1) - 1;
    if (n <= 0) this.busyByJob.delete(name);
    else this.busyByJob.set(name, n);
  }

  private serveWaiters(): void {
    if (this.closed) return;
    for (let i = 0; i < this.waiters.length;) {
      if (this.tryServe(this.waiters[i]!)) this.waiters.splice(i, 1);
      else i++;
    }
  }
}
