import { inject, injectable } from 'inversify';
import type { ClientSession, Collection, Db } from 'mongodb';
import { TOKENS } from '../tokens.js';
import type { OutboxEntry } from './outbox-entry.js';

/** The `outbox` collection. */
@injectable()
export class OutboxRepository {
  private readonly outbox: Collection<OutboxEntry>;

  constructor(@inject(TOKENS.Db) db: Db) {
    this.outbox = db.collection<OutboxEntry>('outbox');
  }

  async add(entry: OutboxEntry, session: ClientSession): Promise<void> {
    await this.outbox.insertOne(entry, { session });
  }

  get(id: string): Promise<OutboxEntry | null> {
    return this.outbox.findOne({ _id: id });
  }

  /** Marks the entry delivered unless it already is (the first delivery's time and message id win). */
  async markDelivered(id: string, messageId: string, now: Date): Promise<void> {
    await this.outbox.updateOne({ _id: id, deliveredAt: null }, { $set: { deliveredAt: now, messageId } });
  }

  countPending(): Promise<number> {
    return this.outbox.countDocuments({ deliveredAt: null });
  }
}
