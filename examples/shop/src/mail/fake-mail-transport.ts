import { inject, injectable } from 'inversify';
import type { Logger } from '@loom/core';
import { TOKENS } from '../tokens.js';
import { MailTransport, type Mail } from './mail-transport.js';

/**
 * A mail provider stand-in that logs instead of sending. Like real providers with idempotency
 * keys, it drops a second send of one key (within this process) and answers with the first message id.
 */
@injectable()
export class FakeMailTransport extends MailTransport {
  /** Every message actually sent, in order. */
  readonly sent: Array<Mail & { messageId: string }> = [];
  private readonly byKey = new Map<string, string>();

  constructor(@inject(TOKENS.Logger) private readonly logger: Logger) {
    super();
  }

  async send(mail: Mail): Promise<{ messageId: string; duplicate: boolean }> {
    const existing = this.byKey.get(mail.idempotencyKey);
    if (existing) return { messageId: existing, duplicate: true };
    const messageId = `msg-${this.sent.length + 1}`;
    this.byKey.set(mail.idempotencyKey, messageId);
    this.sent.push({ ...mail, messageId });
    this.logger.info({ to: mail.to, key: mail.idempotencyKey, messageId }, `mail: "${mail.subject}" sent to ${mail.to}`);
    return { messageId, duplicate: false };
  }
}
