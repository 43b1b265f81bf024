import { inject, injectable } from 'inversify';
import type { ClientSession, Collection, Db } from 'mongodb';
import { TOKENS } from '../tokens.js';
import type { Receipt } from './receipt.js';

/** The `receipts` collection: the idempotent sink (its `_id` is the receipt key). */
@injectable()
export class ReceiptRepository {
  private readonly receipts: Collection<Receipt>;

  constructor(@inject(TOKENS.Db) db: Db) {
    this.receipts = db.collection<Receipt>('receipts');
  }

  /**
   * Inserts the receipt unless its key exists; returns whether it did. A duplicate delivery is a
   * successful no-op (an upsert, because a duplicate-key error would abort the transaction).
   */
  async insertIfAbsent(receipt: Receipt, session: ClientSession): Promise<boolean> {
    const { _id, ...fields } = receipt;
    const result = await this.receipts.updateOne({ _id }, { $setOnInsert: fields }, { upsert: true, session });
    return result.upsertedCount === 1;
  }

  countForOrder(orderId: string): Promise<number> {
    return this.receipts.countDocuments({ orderId });
  }
}
