import { inject } from 'inversify';
import { z } from 'zod';
import { Job, PermanentError, type Clock, type JobContext } from '@loom/core';
import type { ShopConfig } from '../config.js';
import { Carrier } from '../fulfillment/carrier.js';
import { PaymentGateway } from '../fulfillment/payment-gateway.js';
import { Warehouse } from '../fulfillment/warehouse.js';
import { OrderRepository } from '../orders/order-repository.js';
import { TOKENS } from '../tokens.js';

export const FulfillOrderPayload = z.object({ orderId: z.string().min(1) });

/**
 * A workflow: each step's result is stored once and replayed on later attempts, so a retry after
 * a crash never reserves or charges twice. The durable sleep frees the worker while the parcel
 * waits for pickup; the job comes back after it, even in another process.
 */
@Job({
  name: 'fulfill-order',
  queue: 'fulfillment',
  payload: FulfillOrderPayload,
  retries: 5,
  timeout: '30s',
  idempotencyKey: (p) => `fulfill:${p.orderId}`,
})
export class FulfillOrder {
  constructor(
    @inject(OrderRepository) private readonly orders: OrderRepository,
    @inject(Warehouse) private readonly warehouse: Warehouse,
    @inject(PaymentGateway) private readonly payments: PaymentGateway,
    @inject(Carrier) private readonly carrier: Carrier,
    @inject(TOKENS.Config) private readonly config: ShopConfig,
    @inject(TOKENS.Clock) private readonly clock: Clock,
  ) {}

  async run({ orderId }: z.infer<typeof FulfillOrderPayload>, ctx: JobContext): Promise<{ trackingNumber: string }> {
    const order = await this.orders.get(orderId);
    if (!order) throw new PermanentError(`Order ${orderId} does not exist; nothing to fulfil`);
    const reservation = await ctx.step('reserve-stock', () => this.warehouse.reserve(orderId, order.items));
    const charge = await ctx.step('charge', () => this.payments.charge({ idempotencyKey: `charge:${orderId}`, amountCents: order.totalCents }));
    await ctx.step('mark-paid', () => this.orders.setStatus(orderId, 'paid', this.clock.now()));
    await ctx.sleep('wait-for-pickup', this.config.pickupDelay);
    const { trackingNumber } = await ctx.step('ship', () => this.carrier.ship(orderId, ctx.signal));
    await this.orders.setStatus(orderId, 'shipped', this.clock.now(), { trackingNumber });
    ctx.log.info({ orderId, reservation: reservation.reservationId, charge: charge.chargeId, trackingNumber }, `order ${orderId} shipped`);
    return { trackingNumber };
  }
}
