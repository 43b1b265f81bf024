import type { Clock } from '../support/clock.js';
import { plainString } from './plain-string.js';
import type { QueueSummary } from '../store/operations.js';
import type { FlowUsage } from '../store/flow.js';
import type { JobStore } from '../store/store.js';

/** Where the engine hooks into `queues`. */
export interface QueuesHooks {
  onPaused?(queue: string): void;
  onResumed?(queue: string): void;
}

function queueName(name: unknown, method: string): string {
  return plainString(name, `queues.${method} queue`);
}

/**
 * `loom.queues`: pause, resume and look at queues. A pause is stored, so every engine instance
 * sharing the store stops claiming from the queue within one poll interval (this instance at once);
 * enqueue keeps working, and jobs already running finish as usual.
 */
export class Queues {
  constructor(private readonly deps: { store: JobStore; clock: Clock; hooks?: QueuesHooks }) {}

  async pause(queue: string): Promise<void> {
    await this.deps.store.setQueuePaused(queueName(queue, 'pause'), true, this.deps.clock.now());
    this.deps.hooks?.onPaused?.(queue);
  }

  /** Lets claims take the queue's jobs again; this instance's workers look at once. */
  async resume(queue: string): Promise<void> {
    await this.deps.store.setQueuePaused(queueName(queue, 'resume'), false, this.deps.clock.now());
    this.deps.hooks?.onResumed?.(queue);
  }

  /** Every queue with jobs, dead letters or a pause, by name: paused or not, counts per status, oldest queued job. */
  list(): Promise<QueueSummary[]> {
    return this.deps.store.listQueues(this.deps.clock.now());
  }

  /**
   * Flow control as it stands: each limit the store knows (from the claims of engines that run the
   * job), its use (running slots, starts in the rate window), the group and rate-limit keys in
   * use, and holds (`RateLimitedError`). A name appears once an engine has claimed with its limits.
   */
  flow(): Promise<FlowUsage[]> {
    return this.deps.store.flowUsage(this.deps.clock.now());
  }
}
