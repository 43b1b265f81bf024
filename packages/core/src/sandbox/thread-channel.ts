import { Worker } from 'node:worker_threads';
import type { SandboxChannel } from './channel.js';
import type { FromThread, ThreadData, ToThread } from './wire.js';

/** A sandbox runner in a worker thread of the engine's process (jobs without `resourceLimits`). */
export class ThreadChannel implements SandboxChannel {
  readonly kind = 'thread';
  readonly id: number;
  private readonly worker: Worker;
  /** The last error the thread reported before exiting (an uncaught throw). */
  private lastError: Error | undefined;

  constructor(entry: URL, data: ThreadData) {
    this.worker = new Worker(entry, { workerData: data });
    // Idle threads must not keep the process alive: the engine's own timers do while it runs.
    this.worker.unref();
    this.id = this.worker.threadId;
    this.worker.on('error', (err) => {
      this.lastError = err;
    });
  }

  post(message: ToThread): void {
    this.worker.postMessage(message);
  }

  onMessage(listener: (message: FromThread) => void): void {
    this.worker.on('message', listener);
  }

  onExit(listener: (crash: string) => void): void {
    this.worker.once('exit', (code) => {
      const err = this.lastError as (Error & { code?: string }) | undefined;
      if (err?.code === 'ERR_WORKER_OUT_OF_MEMORY') listener(`ran out of memory: ${err.message}`);
      else if (err) listener(`threw outside the handler: ${err.message}`);
      else listener(`exited with code ${code} (process.exit was called in the handler, or the thread ended)`);
    });
  }

  terminate(): void {
    void this.worker.terminate();
  }
}
