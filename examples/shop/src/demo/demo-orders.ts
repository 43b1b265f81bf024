import type { NewOrder } from '../orders/order.js';

/** What the demo burst sent and what the API answered. */
export interface BurstResult {
  orderIds: string[];
  /** POSTs answered 202 (new order). */
  placed: number;
  /** POSTs of an order already placed (answered 200, `deduplicated: true`). */
  repeated: number;
  deduplicated: number;
}

const HOOKS = 'https://hooks.example';
/**
 * Webhook endpoints of the demo's customers: most answer, some after a few refusals. Two refuse
 * 5 times: more than the 4 attempts FlakyWebhook gets, so they end in the dead letters, and a retry
 * from there (`POST /dead-letters/:id/retry`) gets through on its second attempt.
 */
const WEBHOOKS = [
  `${HOOKS}/ok`,
  `${HOOKS}/flaky?fails=1`,
  undefined,
  `${HOOKS}/flaky?fails=2`,
  `${HOOKS}/flaky?fails=5`,
  `${HOOKS}/ok`,
  `${HOOKS}/flaky?fails=3`,
  `${HOOKS}/flaky?fails=5`,
];

/** The demo's orders, with ids unique to this run (so a persistent MONGODB_URI database gets new ones each time). */
export function demoOrders(runId: string): NewOrder[] {
  return WEBHOOKS.map((webhookUrl, i) => {
    const order: NewOrder = {
      orderId: `${runId}-${i + 1}`,
      email: `customer${i + 1}@example.com`,
      items: [
        { sku: 'LOOM-MUG', quantity: 1 + (i % 3), priceCents: 1200 },
        { sku: 'LOOM-TEE', quantity: 1, priceCents: 2500 },
      ],
    };
    if (webhookUrl) order.webhookUrl = webhookUrl;
    return order;
  });
}

/**
 * POSTs every order, four at a time, then the first three again (a double-clicked "Buy" button):
 * the repeats get the jobs the first POSTs made, so each order still gets one receipt.
 */
export async function submitBurst(baseUrl: string, orders: readonly NewOrder[], onResponse: () => void = () => {}): Promise<BurstResult> {
  const result: BurstResult = { orderIds: orders.map((o) => o.orderId), placed: 0, repeated: 0, deduplicated: 0 };
  const post = async (order: NewOrder): Promise<void> => {
    const res = await fetch(`${baseUrl}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(order) });
    const body = (await res.json()) as { deduplicated?: boolean; error?: { message: string } };
    if (res.status !== 202 && res.status !== 200) throw new Error(`POST /orders answered ${res.status}: ${body.error?.message ?? JSON.stringify(body)}`);
    if (res.status === 202) result.placed++;
    else result.repeated++;
    if (body.deduplicated) result.deduplicated++;
    onResponse();
  };
  await inParallel(orders, 4, post);
  await inParallel(orders.slice(0, 3), 4, post);
  return result;
}

async function inParallel<T>(items: readonly T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
}
