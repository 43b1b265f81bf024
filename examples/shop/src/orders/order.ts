import { z } from 'zod';

/** What `POST /orders` accepts. The client picks `orderId` (e.g. its checkout id), so a retried POST is the same order. */
export const NewOrderSchema = z.object({
  orderId: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, "_" or "-", at most 64'),
  email: z.email(),
  items: z.array(z.object({ sku: z.string().min(1), quantity: z.number().int().positive(), priceCents: z.number().int().nonnegative() })).min(1),
  /** Where to POST `order.placed` (FlakyWebhook). */
  webhookUrl: z.url().optional(),
});
export type NewOrder = z.infer<typeof NewOrderSchema>;
export type OrderItem = NewOrder['items'][number];

export type OrderStatus = 'placed' | 'in-review' | 'rejected' | 'paid' | 'shipped';

/** An order as stored in the `orders` collection. */
export interface Order {
  _id: string;
  email: string;
  items: OrderItem[];
  totalCents: number;
  webhookUrl?: string;
  status: OrderStatus;
  trackingNumber?: string;
  createdAt: Date;
  updatedAt: Date;
}

export function orderTotalCents(items: readonly OrderItem[]): number {
  return items.reduce((sum, item) => sum + item.quantity * item.priceCents, 0);
}
