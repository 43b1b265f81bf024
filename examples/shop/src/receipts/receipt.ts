/** A receipt as stored: `_id` is its idempotency key, so a second delivery cannot add another. */
export interface Receipt {
  _id: string;
  orderId: string;
  email: string;
  totalCents: number;
  createdAt: Date;
}

/** The business identity of an order's receipt: the job's idempotency key and the receipt's `_id`. */
export function receiptKey(orderId: string): string {
  return `receipt:${orderId}`;
}
