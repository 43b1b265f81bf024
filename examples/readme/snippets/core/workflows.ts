import { inject } from 'inversify';
import { z } from 'zod';
import type { Loom } from '@loom/core';
import { Mailer } from '../placeholders.js';

declare class Warehouse {
  pack(orderId: string, sku: string): Promise<{ parcelId: string }>;
}
declare class Payments {
  charge(request: { amountCents: number; key: string }): Promise<{ id: string }>;
  refund(chargeId: string): Promise<void>;
}
const Order = z.object({ id: z.string(), email: z.string(), totalCents: z.number(), items: z.array(z.object({ sku: z.string() })) });
declare const loom: Loom;
declare const order: z.infer<typeof Order>;

import { Job, LoomError, type JobContext } from '@loom/core';

@Job({ name: 'pack-parcel', queue: 'warehouse', retries: 5 })
class PackParcel {
  constructor(@inject(Warehouse) private readonly warehouse: Warehouse) {}
  async run(p: { orderId: string; sku: string }) {
    return this.warehouse.pack(p.orderId, p.sku); // → { parcelId: string }
  }
}

@Job({ name: 'fulfil-order', retries: 3, payload: Order })
class FulfilOrder {
  constructor(
    @inject(Payments) private readonly payments: Payments,
    @inject(Mailer) private readonly mailer: Mailer,
  ) {}

  async run(order: z.infer<typeof Order>, ctx: JobContext) {
    const charge = await ctx.step('charge', () => this.payments.charge({ amountCents: order.totalCents, key: `charge:${order.id}` }));

    // Big orders wait for a human; loom.signal(jobId, 'approve', { by }) delivers the decision.
    if (order.totalCents > 100_000) {
      try {
        await ctx.waitForSignal('approve', { timeout: '2d' });
      } catch (err) {
        if (!LoomError.is(err, 'WAIT_TIMEOUT')) throw err;
        await ctx.step('refund', () => this.payments.refund(charge.id));
        return { status: 'refunded' };
      }
    }

    // Fan out: one child job per item, enqueued once per parent however often this run is retried.
    const children = [];
    for (const item of order.items) children.push(await ctx.enqueue(PackParcel, { orderId: order.id, sku: item.sku }));
    const parcels = await ctx.waitForJob<{ parcelId: string }>(
      children.map((c) => c.id),
      { timeout: '1d' },
    );

    await ctx.sleep('cooling-off', '3d'); // durable: no worker is held meanwhile
    await ctx.step('mail', () => this.mailer.send(order.email, `Shipped: ${parcels.map((p) => p.parcelId).join(', ')}`));
    return { status: 'shipped', parcels };
  }
}

const { id } = await loom.enqueue(FulfilOrder, order);
await loom.signal(id, 'approve', { by: 'ann' }); // kept on the job if it is not waiting yet
console.log((await loom.getJob(id))?.steps); // [{ name: 'charge', kind: 'step', status: 'completed', result, at, seq }, …]
