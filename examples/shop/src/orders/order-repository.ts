import { inject, injectable } from 'inversify';
import type { ClientSession, Collection, Db } from 'mongodb';
import { TOKENS } from '../tokens.js';
import type { Order, OrderStatus } from './order.js';

/** The `orders` collection. */
@injectable()
export class OrderRepository {
  private readonly orders: Collection<Order>;

  constructor(@inject(TOKENS.Db) db: Db) {
    this.orders = db.collection<Order>('orders');
  }

  /**
   * Inserts the order unless one with its id exists; returns whether it was inserted. An upsert,
   * not insert-and-catch: a duplicate-key error would abort the surrounding transaction.
   */
  async insertIfAbsent(order: Order, session?: ClientSession): Promise<boolean> {
    const { _id, ...fields } = order;
    const result = await this.orders.updateOne({ _id }, { $setOnInsert: fields }, { upsert: true, session });
    return result.upsertedCount === 1;
  }

  get(orderId: string, session?: ClientSession): Promise<Order | null> {
    return this.orders.findOne({ _id: orderId }, { session });
  }

  /** Sets the status (and extra fields); setting the same values again changes nothing, so retries are safe. */
  async setStatus(orderId: string, status: OrderStatus, now: Date, extra: Partial<Pick<Order, 'trackingNumber'>> = {}): Promise<void> {
    await this.orders.updateOne({ _id: orderId }, { $set: { status, updatedAt: now, ...extra } });
  }

  countCreatedBetween(from: Date, to: Date): Promise<number> {
    return this.orders.countDocuments({ createdAt: { $gte: from, $lt: to } });
  }
}
