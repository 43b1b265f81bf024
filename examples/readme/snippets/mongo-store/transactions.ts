import type { ClientSession, Collection } from 'mongodb';
import { Job, type JobContext, type Loom } from '@loom/core';
import type { MongoStore } from '@loom/mongo-store';

@Job({ name: 'send-receipt' })
class SendReceipt {
  async run(_payload: { orderId: string }): Promise<void> {}
}
declare const store: MongoStore;
declare const loom: Loom;
declare const ctx: JobContext;
declare const orders: Collection<{ orderId: string }>;
declare const receipts: Collection<{ orderId: string }>;
declare const order: { orderId: string };
declare const r: { orderId: string };
declare const payload: { orderId: string };

await store.withTransaction(async (s) => {
  const session = s as ClientSession; // the driver's session
  await orders.insertOne(order, { session }); // `orders` from store.client
  await loom.enqueue(SendReceipt, payload, { session }); // stored only if the order commits
});
// in a handler: the handler's writes and the job's completion commit together, or neither does
await ctx.transaction(async (s) => {
  await receipts.insertOne(r, { session: s as ClientSession });
});
