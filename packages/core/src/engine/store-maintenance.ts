import type { Clock } from '../support/clock.js';
import type { Logger } from '../support/logger.js';
import { STORE_MAINTENANCE_MS, type JobStore } from '../store/store.js';

/**
 * Calls the store's {@link JobStore.maintain} every {@link STORE_MAINTENANCE_MS} while the engine
 * is started (MongoStore deletes offloaded payloads and results whose jobs retention removed). One
 * call at a time; a failure is logged and the next round tries again. Does nothing for a store
 * without `maintain`.
 */
export class StoreMaintenance {
  #cancelTimer: (() => void) | undefined;
  #started = false;

  constructor(private readonly deps: { store: JobStore; clock: Clock; logger: Logger; everyMs?: number }) {}

  start(): void {
    if (this.#started || !this.deps.store.maintain) return;
    this.#started = true;
    this.#schedule();
  }

  stop(): void {
    this.#started = false;
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
  }

  #schedule(): void {
    if (!this.#started) return;
    this.#cancelTimer = this.deps.clock.setTimer(() => void this.#run().finally(() => this.#schedule()), this.deps.everyMs ?? STORE_MAINTENANCE_MS);
  }

  async #run(): Promise<void> {
    try {
      await this.deps.store.maintain?.(this.deps.clock.now());
    } catch (err) {
      this.deps.logger.warn({ err }, 'Store maintenance failed (e.g. deleting offloaded payloads of removed jobs); it runs again in 5 minutes');
    }
  }
}
