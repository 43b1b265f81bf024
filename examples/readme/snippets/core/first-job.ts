import { Mailer, render } from '../placeholders.js';
import 'reflect-metadata';
import { Container, inject } from 'inversify';
import { z } from 'zod';
import { Job, Loom, MemoryStore, PermanentError, type JobContext } from '@loom/core';

const Receipt = z.object({ orderId: z.string(), email: z.string().email() });

@Job({
  name: 'send-receipt',
  payload: Receipt,
  retries: 5,
  timeout: '30s',
  backoff: { type: 'exponential', delay: '2s', max: '1h', jitter: 'full' },
  idempotencyKey: (p) => `receipt:${p.orderId}`,
})
class SendReceipt {
  constructor(@inject(Mailer) private readonly mailer: Mailer) {}
  async run(payload: z.infer<typeof Receipt>, ctx: JobContext) {
    const body = await ctx.step('render', () => render(payload));
    await ctx.step('send', () => this.mailer.send(payload.email, body));
  }
}

const container = new Container();
container.bind(Mailer).toSelf();
const loom = await Loom.create({ container, store: new MemoryStore(), concurrency: 20 });
await loom.start();
await loom.enqueue(SendReceipt, { orderId: 'o1', email: 'a@b.co' }, { delay: '5m' });
await loom.stop(); // stop claiming, finish in-flight runs within shutdownGrace, release the rest

export { PermanentError };
