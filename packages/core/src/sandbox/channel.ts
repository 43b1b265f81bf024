import type { FromThread, ToThread } from './wire.js';

/**
 * What the engine talks to one sandbox runner through: a worker thread, or a child process for a
 * job with `resourceLimits`. Both carry the same messages (structured clones) and end the same
 * ways; the run on them (`SandboxThread`) does not know which it has.
 */
export interface SandboxChannel {
  /** `thread` or `process`, for logs. */
  readonly kind: 'thread' | 'process';
  /** The worker's `threadId`, or the child's `pid`. */
  readonly id: number;
  post(message: ToThread): void;
  onMessage(listener: (message: FromThread) => void): void;
  /** Called once when the runner has ended; `crash` says why when it ended on its own. */
  onExit(listener: (crash: string) => void): void;
  /** Ends the runner; its exit listener then runs. */
  terminate(): void;
}
