import type { Clock } from '../support/clock.js';
import type { DeadLetter } from '../store/job-record.js';
import type { DeadLetterFilter, JobStore } from '../store/store.js';

/** `loom.deadLetters`: the jobs that ran out of attempts or failed permanently. */
export class DeadLetters {
  constructor(private readonly deps: { store: JobStore; clock: Clock; onReplayed: () => void }) {}

  /** Dead letters matching `filter`, newest first. */
  list(filter: DeadLetterFilter = {}): Promise<DeadLetter[]> {
    return this.deps.store.listDeadLetters(filter);
  }

  /**
   * Puts a dead job back in its queue (same id, attempts reset, runs now). Returns its id, or null
   * when no such dead letter exists (already retried or purged): two concurrent retries make one job.
   */
  async retry(id: string): Promise<string | null> {
    const jobId = await this.deps.store.replayDeadLetter(id, this.deps.clock.now());
    if (jobId !== null) this.deps.onReplayed();
    return jobId;
  }

  /** Deletes the dead letters matching `filter` (all of them when it is empty); returns how many. */
  purge(filter: DeadLetterFilter = {}): Promise<number> {
    return this.deps.store.purgeDeadLetters(filter);
  }
}
