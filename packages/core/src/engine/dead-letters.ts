import type { Clock } from '../support/clock.js';
import { InvalidArgumentError } from '../support/errors.js';
import type { Logger } from '../support/logger.js';
import type { DeadLetter } from '../store/job-record.js';
import type { DeadLetterReplayReport } from '../store/operations.js';
import type { DeadLetterFilter, JobStore } from '../store/store.js';

/** Options of a bulk `deadLetters.retry(filter)`. */
export interface DeadLetterRetryOptions {
  /** Called with how many matching letters were handled so far, after each batch (for progress lines). */
  onProgress?: (handled: number) => void;
  /** Called with the letters that matched but could not be retried (e.g. their idempotency key is taken again). */
  onSkipped?: (skipped: DeadLetterReplayReport['skipped']) => void;
}

const FILTER_KEYS = new Set(['name', 'queue', 'before', 'limit']);

/** Checks a dead-letter filter: plain values only (an operator object is refused before any query). */
export function checkDeadLetterFilter(filter: unknown, method: string): DeadLetterFilter {
  const bad = (detail: string) => new InvalidArgumentError(`deadLetters.${method} filter`, `${detail}; nothing changed`);
  if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) throw bad('must be an object such as { name: "send-receipt" }');
  const f = filter as Record<string, unknown>;
  for (const [key, value] of Object.entries(f)) {
    if (!FILTER_KEYS.has(key)) throw bad(`has an unknown field "${key}" (use name, queue, before, limit)`);
    if (value === undefined) continue;
    if ((key === 'name' || key === 'queue') && (typeof value !== 'string' || value === ''))
      throw bad(`${key} must be a non-empty string (query operators are not accepted)`);
    if (key === 'before' && !(value instanceof Date && !Number.isNaN(value.getTime()))) throw bad('before must be a valid Date');
    if (key === 'limit' && !(typeof value === 'number' && Number.isInteger(value) && value >= 0)) throw bad('limit must be an integer >= 0');
  }
  return f as DeadLetterFilter;
}

/** `loom.deadLetters`: the jobs that ran out of attempts or failed permanently. */
export class DeadLetters {
  constructor(private readonly deps: { store: JobStore; clock: Clock; onReplayed: () => void; logger?: Logger }) {}

  /** Dead letters matching `filter`, newest first. */
  list(filter: DeadLetterFilter = {}): Promise<DeadLetter[]> {
    return this.deps.store.listDeadLetters(checkDeadLetterFilter(filter, 'list'));
  }

  /**
   * Puts a dead job back in its queue (same id, attempts reset, runs now). Returns its id, or null
   * when no such dead letter exists (already retried or purged): two concurrent retries make one job.
   */
  retry(id: string): Promise<string | null>;
  /**
   * Bulk: puts back every dead letter matching `filter` (`{}` = all of them), one by one, newest
   * first; returns how many were put back. Letters that cannot be (their idempotency key is held by
   * a newer job) stay dead, are logged with their id, and are reported to `options.onSkipped`.
   */
  retry(filter: DeadLetterFilter, options?: DeadLetterRetryOptions): Promise<number>;
  async retry(target: string | DeadLetterFilter, options: DeadLetterRetryOptions = {}): Promise<string | null | number> {
    if (typeof target === 'string') {
      const jobId = await this.deps.store.replayDeadLetter(target, this.deps.clock.now());
      if (jobId !== null) this.deps.onReplayed();
      return jobId;
    }
    const filter = checkDeadLetterFilter(target, 'retry');
    const report = await this.deps.store.replayDeadLetters(filter, {
      now: this.deps.clock.now(),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
    if (report.replayed > 0) this.deps.onReplayed();
    for (const { id, reason } of report.skipped) this.deps.logger?.warn({ jobId: id }, `Dead letter ${id} was not retried: ${reason}`);
    if (report.skipped.length > 0) options.onSkipped?.(report.skipped);
    return report.replayed;
  }

  /** Deletes the dead letters matching `filter` (all of them when it is empty); returns how many. */
  purge(filter: DeadLetterFilter = {}): Promise<number> {
    return this.deps.store.purgeDeadLetters(checkDeadLetterFilter(filter, 'purge'));
  }
}
