import { inject } from 'inversify';
import { z } from 'zod';
import { Job, LoomError, PermanentError, type Clock, type JobContext } from '@loom/core';
import type { ShopConfig } from '../config.js';
import { Carrier } from '../fulfillment/carrier.js';
import { PaymentGateway } from '../fulfillment/payment-gateway.js';
import { Warehouse } from '../fulfillment/warehouse.js';
import { OrderRepository } from '../orders/order-repository.js';
import { TOKENS } from '../tokens.js';

export const FulfillOrderPayload = z.object({ orderId: z.string().min(1) });

/** What a reviewer sends to complete a manual review: `loom tokens complete ID --json '{"approved":true,"by":"ana"}'`. */
export const ManualReview = z.object({ approved: z.boolean(), by: z.string().min(1) });

/** Orders above this total wait for a manual review unless the config says otherwise. */
export const MANUAL_REVIEW_ABOVE_CENTS = 100_000;

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

  async run({ orderId }: z.infer<typeof FulfillOrderPayload>, ctx: JobContext): Promise<{ trackingNumber: string } | { rejected: string }> {
    const order = await this.orders.get(orderId);
    if (!order) throw new PermanentError(`Order ${orderId} does not exist; nothing to fulfil`);
    if (order.totalCents > (this.config.manualReviewAboveCents ?? MANUAL_REVIEW_ABOVE_CENTS)) {
      const rejected = await this.review(orderId, ctx);
      if (rejected !== undefined) return { rejected };
    }
    const reservation = await ctx.step('reserve-stock', () => this.warehouse.reserve(orderId, order.items));
    const charge = await ctx.step('charge', () => this.payments.charge({ idempotencyKey: `charge:${orderId}`, amountCents: order.totalCents }));
    await ctx.step('mark-paid', () => this.orders.setStatus(orderId, 'paid', this.clock.now()));
    await ctx.sleep('wait-for-pickup', this.config.pickupDelay);
    const { trackingNumber } = await ctx.step('ship', () => this.carrier.ship(orderId, ctx.signal));
    await this.orders.setStatus(orderId, 'shipped', this.clock.now(), { trackingNumber });
    ctx.log.info({ orderId, reservation: reservation.reservationId, charge: charge.chargeId, trackingNumber }, `order ${orderId} shipped`);
    return { trackingNumber };
  }

  /**
   * "Manual review": the run waits, holding no worker, for a person to complete the review token
   * (`loom tokens complete`, `loom.tokens.complete`, or the signed link when configured). Returns
   * why the order was rejected, or undefined when it was approved.
   */
  private async review(orderId: string, ctx: JobContext): Promise<string | undefined> {
    const token = await ctx.step('manual-review-token', () => ctx.createWaitToken({ timeout: this.config.manualReviewTimeout ?? '3d', schema: ManualReview }));
    await ctx.step('mark-in-review', () => this.orders.setStatus(orderId, 'in-review', this.clock.now()));
    ctx.log.info(
      { orderId, tokenId: token.id },
      `order ${orderId} waits for manual review: loom tokens complete ${token.id} --json '{"approved":true,"by":"you"}'`,
    );
    let reason: string | undefined;
    try {
      const decision = await ctx.waitForToken(token);
      if (!decision.approved) reason = `not approved by ${decision.by}`;
    } catch (err) {
      if (!LoomError.is(err, 'TOKEN_REJECTED') && !LoomError.is(err, 'TOKEN_TIMEOUT')) throw err;
      reason = err.message;
    }
    if (reason !== undefined) await ctx.step('mark-rejected', () => this.orders.setStatus(orderId, 'rejected', this.clock.now()));
    return reason;
  }
}
