import { inject, injectable } from 'inversify';
import type { Clock, EnqueueResult } from '@loom/core';
import { JobQueue } from '../infra/job-queue.js';
import { UnitOfWork } from '../infra/unit-of-work.js';
import { FlakyWebhook } from '../jobs/flaky-webhook.js';
import { FulfillOrder } from '../jobs/fulfill-order.js';
import { SendReceipt } from '../jobs/send-receipt.js';
import { TOKENS } from '../tokens.js';
import { orderTotalCents, type NewOrder, type Order } from './order.js';
import { OrderRepository } from './order-repository.js';

/** What placing an order did. */
export interface PlacedOrder {
  orderId: string;
  /** False when this order id was placed before: nothing new was stored or enqueued. */
  created: boolean;
  /** The jobs of this order (the existing ones for a repeat). */
  jobs: { sendReceipt: EnqueueResult; fulfillOrder: EnqueueResult; flakyWebhook?: EnqueueResult };
}

@injectable()
export class OrderService {
  constructor(
    @inject(OrderRepository) private readonly orders: OrderRepository,
    @inject(UnitOfWork) private readonly unitOfWork: UnitOfWork,
    @inject(JobQueue) private readonly queue: JobQueue,
    @inject(TOKENS.Clock) private readonly clock: Clock,
  ) {}

  /**
   * Stores the order and enqueues its jobs in one transaction: no order without its receipt job,
   * no receipt job for an order that was rolled back. The jobs' idempotency keys come from the
   * order id, so placing the same order again returns the jobs it already has.
   */
  placeOrder(input: NewOrder): Promise<PlacedOrder> {
    return this.unitOfWork.run(async (session) => {
      const now = this.clock.now();
      const order: Order = {
        _id: input.orderId,
        email: input.email,
        items: input.items,
        totalCents: orderTotalCents(input.items),
        status: 'placed',
        createdAt: now,
        updatedAt: now,
      };
      if (input.webhookUrl) order.webhookUrl = input.webhookUrl;
      const created = await this.orders.insertIfAbsent(order, session);
      const { orderId } = input;
      const jobs: PlacedOrder['jobs'] = {
        sendReceipt: await this.queue.enqueue(SendReceipt, { orderId }, { session }),
        fulfillOrder: await this.queue.enqueue(FulfillOrder, { orderId }, { session }),
      };
      const stored = created ? order : await this.orders.get(orderId, session);
      if (stored?.webhookUrl) jobs.flakyWebhook = await this.queue.enqueue(FlakyWebhook, { orderId, url: stored.webhookUrl }, { session });
      return { orderId, created, jobs };
    });
  }

  getOrder(orderId: string): Promise<Order | null> {
    return this.orders.get(orderId);
  }
}
