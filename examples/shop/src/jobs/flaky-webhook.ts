import { inject } from 'inversify';
import { z } from 'zod';
import { Job, type JobContext } from '@loom/core';
import { WebhookClient } from '../webhooks/webhook-client.js';
import { WebhookRejectedError } from '../webhooks/webhook-rejected-error.js';

export const FlakyWebhookPayload = z.object({ orderId: z.string().min(1), url: z.url() });

/**
 * Tells the customer's endpoint about the order. Endpoints fail: each refusal is retried, backing
 * off exponentially from the endpoint's Retry-After; after the last retry the job is parked in the
 * dead letters, where `POST /dead-letters/:id/retry` puts it back once the endpoint is fixed.
 */
@Job({
  name: 'flaky-webhook',
  queue: 'webhooks',
  payload: FlakyWebhookPayload,
  retries: 3,
  backoff: (attempt, error) => Math.min((error instanceof WebhookRejectedError ? (error.retryAfterMs ?? 1000) : 1000) * 2 ** (attempt - 1), 60_000),
  timeout: '10s',
  idempotencyKey: (p) => `webhook:${p.orderId}`,
})
export class FlakyWebhook {
  constructor(@inject(WebhookClient) private readonly webhooks: WebhookClient) {}

  async run({ orderId, url }: z.infer<typeof FlakyWebhookPayload>, ctx: JobContext): Promise<void> {
    await this.webhooks.post(url, { id: `order.placed:${orderId}`, type: 'order.placed', data: { orderId } }, ctx.signal);
  }
}
