import type { Clock } from '../support/clock.js';
import { plainString } from './plain-string.js';
import type { QueueSummary } from '../store/operations.js';
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
}
