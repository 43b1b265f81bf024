/** The receiving endpoint refused a webhook; `retryAfterMs` is its Retry-After, when it sent one. */
export class WebhookRejectedError extends Error {
  readonly code = 'WEBHOOK_REJECTED';

  constructor(
    readonly url: string,
    readonly status: number,
    readonly retryAfterMs?: number,
  ) {
    super(`POST ${url} answered ${status}${retryAfterMs !== undefined ? ` (Retry-After ${retryAfterMs} ms)` : ''}`);
    this.name = 'WebhookRejectedError';
  }
}
