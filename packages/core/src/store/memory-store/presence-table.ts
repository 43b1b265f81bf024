/** Engines' presence rows in a MemoryStore: one per engine id, expired rows dropped as lists pass them. */
import { LoomError } from '../../support/errors.js';
import { copyPresence, MAX_LISTED_WORKERS, presenceProblem, type WorkerPresence } from '../presence.js';
import { assertDate, assertString } from './arguments.js';

export class PresenceTable {
  readonly #rows = new Map<string, WorkerPresence>();

  record(presence: WorkerPresence): void {
    const problem = presenceProblem(presence);
    if (problem !== undefined) throw new LoomError('INVALID_ARGUMENT', `MemoryStore: presence ${problem}; nothing changed`);
    this.#rows.set(presence.id, copyPresence(presence));
  }

  remove(id: string): boolean {
    assertString(id, 'removePresence id');
    return this.#rows.delete(id);
  }

  list(now: Date): WorkerPresence[] {
    assertDate(now, 'listPresence now');
    const live: WorkerPresence[] = [];
    for (const [id, row] of this.#rows) {
      if (row.expiresAt.getTime() > now.getTime()) live.push(row);
      // Gone: as a TTL index would, drop it (a later beat of that engine records it again).
      else this.#rows.delete(id);
    }
    live.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return live.slice(0, MAX_LISTED_WORKERS).map(copyPresence);
  }
}
