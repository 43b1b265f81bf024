import { inject } from 'inversify';
import { z } from 'zod';
import { Job, PermanentError, type Clock, type JobContext } from '@loom/core';
import { MailTransport } from '../mail/mail-transport.js';
import { OutboxRepository } from '../outbox/outbox-repository.js';
import { TOKENS } from '../tokens.js';

export const RelayOutboxPayload = z.object({ outboxId: z.string().min(1) });

/**
 * Delivers one outbox entry. At-least-once: a crash between sending and marking it delivered
 * sends again, with the same idempotency key, which the mail provider drops.
 */
@Job({
  name: 'relay-outbox',
  queue: 'emails',
  payload: RelayOutboxPayload,
  retries: 8,
  backoff: { type: 'exponential', delay: '1s', max: '5m', jitter: 'full' },
  idempotencyKey: (p) => `relay:${p.outboxId}`,
})
export class RelayOutbox {
  constructor(
    @inject(OutboxRepository) private readonly outbox: OutboxRepository,
    @inject(MailTransport) private readonly mail: MailTransport,
    @inject(TOKENS.Clock) private readonly clock: Clock,
  ) {}

  async run({ outboxId }: z.infer<typeof RelayOutboxPayload>, ctx: JobContext): Promise<{ messageId: string }> {
    const entry = await this.outbox.get(outboxId);
    if (!entry) throw new PermanentError(`Outbox entry ${outboxId} does not exist; it is written with the job that relays it, so this should not happen`);
    if (entry.deliveredAt && entry.messageId) return { messageId: entry.messageId };
    const { messageId, duplicate } = await this.mail.send({ to: entry.to, subject: entry.subject, text: entry.text, idempotencyKey: entry._id });
    if (duplicate) ctx.log.info({ outboxId }, 'the mail provider already had this message; marking it delivered');
    await this.outbox.markDelivered(entry._id, messageId, this.clock.now());
    return { messageId };
  }
}
