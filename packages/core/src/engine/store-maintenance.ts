import type { Clock } from '../support/clock.js';
import type { Logger } from '../support/logger.js';
import { RepeatingTask } from '../support/repeating-task.js';
import { withDeadline } from '../support/store-deadline.js';
import { STORE_MAINTENANCE_MS, type JobStore } from '../store/store.js';

/**
 * Calls the store's {@link JobStore.maintain} every {@link STORE_MAINTENANCE_MS} while the engine
 * is started (MongoStore deletes offloaded payloads and results whose jobs retention removed). One
 * call at a time, waited for at most a round; a failure is logged and the next round tries again.
 * Does nothing for a store without `maintain`.
 */
export class StoreMaintenance {
  readonly #task: RepeatingTask;
  readonly #everyMs: number;

  constructor(private readonly deps: { store: JobStore; clock: Clock; logger: Logger; everyMs?: number }) {
    this.#everyMs = deps.everyMs ?? STORE_MAINTENANCE_MS;
    this.#task = new RepeatingTask(
      deps.clock,
      () => this.#everyMs,
      () => this.#run(),
    );
  }

  start(): void {
    if (this.deps.store.maintain) this.#task.start();
  }

  stop(): void {
    this.#task.stop();
  }

  async #run(): Promise<void> {
    try {
      // Waited for until the next round would be due: a call that never answers must not end the rounds.
      if (this.deps.store.maintain) await withDeadline(this.deps.clock, 'maintain', this.#everyMs, this.deps.store.maintain(this.deps.clock.now()));
    } catch (err) {
      this.deps.logger.warn(
        { err },
        `Store maintenance failed (e.g. deleting offloaded payloads of removed jobs); it runs again in ${Math.round(this.#everyMs / 1000)} s`,
      );
    }
  }
}
