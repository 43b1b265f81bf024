import { injectable } from 'inversify';

/** A stand-in for a card processor: charges once per idempotency key, as Stripe-like APIs do. */
@injectable()
export class PaymentGateway {
  private readonly charges = new Map<string, string>();

  /** Every distinct charge made. */
  get chargeCount(): number {
    return this.charges.size;
  }

  async charge(request: { idempotencyKey: string; amountCents: number }): Promise<{ chargeId: string; amountCents: number }> {
    let chargeId = this.charges.get(request.idempotencyKey);
    if (!chargeId) this.charges.set(request.idempotencyKey, (chargeId = `ch-${this.charges.size + 1}`));
    return { chargeId, amountCents: request.amountCents };
  }
}
