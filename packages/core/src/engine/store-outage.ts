import type { Clock } from '../support/clock.js';
import type { Logger } from '../support/logger.js';
import type { JobStore } from '../store/store.js';

/**
 * One engine's view of whether its store answers: an outage (a failover, a network cut) is one
 * event, so it gets one log line when it begins and one when it ends, however many claims,
 * heartbeats and outcome writes fail meanwhile. Those failures are still retried as before, and
 * each is logged at debug (with its job id) while an outage is reported. Only failures the store
 * calls transient count (`JobStore.isTransientError`): any other failure is an error of its own
 * and is logged by its caller as such.
 */
export class StoreOutage {
  #since: number | undefined;
  #failures = 0;
  /** The operations that failed during the outage: one of them answering again ends it. */
  readonly #failed = new Set<string>();

  constructor(private readonly deps: { store: JobStore; clock: Clock; logger: Logger }) {}

  /** Whether an outage is reported now. */
  get ongoing(): boolean {
    return this.#since !== undefined;
  }

  /**
   * A store operation failed with `error`. Returns true when the failure belongs to an outage (now
   * reported, once): the caller then logs its own line at debug. False for a failure the store does
   * not call transient, which the caller logs as before.
   */
  failed(operation: string, error: Error): boolean {
    if (!(this.deps.store.isTransientError?.(error) ?? true)) return false;
    this.#failures++;
    this.#failed.add(operation);
    if (this.#since === undefined) {
      this.#since = this.deps.clock.now().getTime();
      this.deps.logger.warn(
        { err: error, operation },
        `The store is not answering (${operation}: ${error.message}); claims pause and writes are retried until it answers again`,
      );
    }
    return true;
  }

  /**
   * `operation` succeeded: ends a reported outage with its one line when that operation had failed
   * during it (another kind answering says little: a store may refuse writes and still answer reads).
   */
  succeeded(operation: string): void {
    if (this.#since === undefined || !this.#failed.has(operation)) return;
    const seconds = (this.deps.clock.now().getTime() - this.#since) / 1000;
    const failures = this.#failures;
    this.#since = undefined;
    this.#failures = 0;
    this.#failed.clear();
    this.deps.logger.warn(
      { outageMs: seconds * 1000, failures },
      `The store answers again after ${seconds.toFixed(1)} s (${failures} operation(s) failed meanwhile and were retried)`,
    );
  }
}
