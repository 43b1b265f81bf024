import { inject } from 'inversify';
import { z } from 'zod';
import { Job, PermanentError, type Clock, type JobContext } from '@loom/core';
import { JobQueue } from '../infra/job-queue.js';
import { mongoSession } from '../infra/mongo-session.js';
import { OrderRepository } from '../orders/order-repository.js';
import { OutboxRepository } from '../outbox/outbox-repository.js';
import { receiptKey } from '../receipts/receipt.js';
import { ReceiptRepository } from '../receipts/receipt-repository.js';
import { renderReceipt } from '../receipts/render-receipt.js';
import { TOKENS } from '../tokens.js';
import { RelayOutbox } from './relay-outbox.js';

export const SendReceiptPayload = z.object({ orderId: z.string().min(1) });

/**
 * The idempotent sink + outbox: in one transaction, the receipt is inserted under its unique key,
 * and only if that insert happened, an outbox entry and the job that relays it are added. The
 * job's completion commits in the same transaction. A second delivery of this job finds the
 * receipt and adds nothing.
 */
@Job({
  name: 'send-receipt',
  queue: 'emails',
  payload: SendReceiptPayload,
  retries: 5,
  backoff: { type: 'exponential', delay: '1s', max: '1m', jitter: 'full' },
  idempotencyKey: (p) => receiptKey(p.orderId),
})
export class SendReceipt {
  constructor(
    @inject(OrderRepository) private readonly orders: OrderRepository,
    @inject(ReceiptRepository) private readonly receipts: ReceiptRepository,
    @inject(OutboxRepository) private readonly outbox: OutboxRepository,
    @inject(JobQueue) private readonly queue: JobQueue,
    @inject(TOKENS.Clock) private readonly clock: Clock,
  ) {}

  async run({ orderId }: z.infer<typeof SendReceiptPayload>, ctx: JobContext): Promise<void> {
    const order = await this.orders.get(orderId);
    if (!order) throw new PermanentError(`Order ${orderId} does not exist, so there is no receipt to send`);
    const key = receiptKey(orderId);
    const mail = renderReceipt(order);
    await ctx.transaction(async (s) => {
      const session = mongoSession(s);
      const now = this.clock.now();
      const inserted = await this.receipts.insertIfAbsent({ _id: key, orderId, email: order.email, totalCents: order.totalCents, createdAt: now }, session);
      if (!inserted) {
        ctx.log.info({ orderId }, `receipt ${key} already exists; nothing to do`);
        return;
      }
      await this.outbox.add({ _id: key, kind: 'receipt-email', to: order.email, ...mail, createdAt: now, deliveredAt: null }, session);
      await this.queue.enqueue(RelayOutbox, { outboxId: key }, { session });
    });
  }
}
