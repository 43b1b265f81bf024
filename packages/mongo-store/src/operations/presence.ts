import type { Collection } from 'mongodb';
import { copyPresence, MAX_LISTED_WORKERS, presenceProblem, type WorkerPresence } from '@loom/core';
import { requireDate, requireString } from '../arguments.js';
import type { WorkerDocument } from '../schema/documents.js';
import { StoreArgumentError } from '../store-errors.js';

function toRecord(doc: WorkerDocument): WorkerPresence {
  const { _id, ...rest } = doc;
  return copyPresence({ id: _id, ...rest });
}

/**
 * Engines' presence rows in the `workers` collection, `_id` = the engine id. Each beat replaces its
 * engine's row (an upsert); lists leave out rows whose `expiresAt` has come, and the TTL index
 * `loom_workers_expiry` deletes them soon after (MongoDB's TTL monitor runs every minute), so the
 * rows of engines that died without stopping never pile up, whether or not anyone lists them.
 */
export class MongoPresence {
  constructor(private readonly workers: Collection<WorkerDocument>) {}

  async record(presence: WorkerPresence): Promise<void> {
    const problem = presenceProblem(presence);
    if (problem !== undefined) throw new StoreArgumentError(`presence ${problem}; nothing changed`);
    const { id, ...fields } = copyPresence(presence);
    await this.workers.replaceOne({ _id: id }, fields, { upsert: true });
  }

  async remove(id: string): Promise<boolean> {
    const { deletedCount } = await this.workers.deleteOne({ _id: requireString(id, 'removePresence id') });
    return deletedCount === 1;
  }

  async list(now: Date): Promise<WorkerPresence[]> {
    const docs = await this.workers
      .find({ expiresAt: { $gt: requireDate(now, 'listPresence now') } })
      .sort({ _id: 1 })
      .limit(MAX_LISTED_WORKERS)
      .toArray();
    return docs.map(toRecord);
  }
}
