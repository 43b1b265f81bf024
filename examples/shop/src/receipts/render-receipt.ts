import type { Order } from '../orders/order.js';

/** The receipt email's text. */
export function renderReceipt(order: Order): { subject: string; text: string } {
  const lines = order.items.map((i) => `  ${i.quantity} x ${i.sku}  ${formatCents(i.quantity * i.priceCents)}`);
  return {
    subject: `Your receipt for order ${order._id}`,
    text: [`Thank you for your order ${order._id}.`, ...lines, `Total: ${formatCents(order.totalCents)}`].join('\n'),
  };
}

function formatCents(cents: number): string {
  return `€${(cents / 100).toFixed(2)}`;
}
