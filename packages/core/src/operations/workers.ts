import type { Clock } from '../support/clock.js';
import type { WorkerPresence } from '../store/presence.js';
import type { JobStore } from '../store/store.js';

/**
 * `loom.workers`: the engine instances sharing the store, as their presence rows describe them.
 * Each started engine records its host, pid, Loom and Node versions, queues, concurrency and the
 * jobs it runs every `presenceInterval` (default 5 s), and deletes its row on `stop()`. One that
 * misses `PRESENCE_MISSED_BEATS` (3) beats in a row (it crashed, hung or lost the store) counts as
 * gone and is no longer listed. Needs no running engine: the CLI and the dashboard read it too.
 */
export class Workers {
  constructor(private readonly deps: { store: JobStore; clock: Clock }) {}

  /** The live engines, by id (at most `MAX_LISTED_WORKERS`). */
  list(): Promise<WorkerPresence[]> {
    return this.deps.store.listPresence(this.deps.clock.now());
  }
}
