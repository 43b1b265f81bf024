import type { SandboxResourceLimits } from '../jobs/job-options.js';
import type { FromThread, ThreadData, ToThread } from './wire.js';
import { ProcessChannel } from './process-channel.js';
import { ThreadChannel } from './thread-channel.js';

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

/**
 * A runner for a job with `limits`. Jobs with `resourceLimits` get a child process whose V8 flags
 * hold them: Node 22 and 24 do not reliably end a worker thread at its heap limit (the thread
 * thrashes, or the whole process aborts: nodejs/node#47224), and the engine must outlive its
 * handlers. Without limits a thread is cheaper (no process start, shared memory of the engine).
 */
export function openChannel(entry: URL, data: ThreadData, limits: SandboxResourceLimits | undefined): SandboxChannel {
  return limits ? new ProcessChannel(entry, data, limits) : new ThreadChannel(entry, data);
}
