import { inject, injectable } from 'inversify';
import { toMs } from '@loom/core';
import type { ShopConfig } from '../config.js';
import { TOKENS } from '../tokens.js';
import { WebhookRejectedError } from './webhook-rejected-error.js';

/**
 * Posts webhooks. This one simulates the receivers, so the demo needs no network: on host
 * `hooks.example`, path `/ok` accepts, `/flaky?fails=N` refuses the first N deliveries of each
 * event, and `/down` refuses until {@link WebhookClient.recover} is called. Every refusal is a 503
 * with the configured Retry-After.
 */
@injectable()
export class WebhookClient {
  private readonly attempts = new Map<string, number>();
  private readonly recovered = new Set<string>();

  constructor(@inject(TOKENS.Config) private readonly config: ShopConfig) {}

  /** Every accepted delivery, in order. */
  readonly delivered: Array<{ url: string; eventId: string }> = [];

  async post(url: string, event: { id: string; type: string; data: unknown }, _signal: AbortSignal): Promise<void> {
    const target = new URL(url);
    const key = `${url} ${event.id}`;
    const attempt = (this.attempts.get(key) ?? 0) + 1;
    this.attempts.set(key, attempt);
    const fails =
      target.pathname === '/down' && !this.recovered.has(url) ? Infinity : target.pathname === '/flaky' ? Number(target.searchParams.get('fails') ?? 1) : 0;
    if (attempt <= fails) throw new WebhookRejectedError(url, 503, toMs(this.config.webhookRetryAfter));
    // Receivers deduplicate by event id; so do we, so a retried delivery counts once.
    if (!this.delivered.some((d) => d.url === url && d.eventId === event.id)) this.delivered.push({ url, eventId: event.id });
  }

  /** Brings a `/down` endpoint back up. */
  recover(url: string): void {
    this.recovered.add(url);
  }
}
