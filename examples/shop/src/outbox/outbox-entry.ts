/** A message whose sending was committed with the change that caused it; the relay delivers it. */
export interface OutboxEntry {
  /** The idempotency key, also handed to the mail transport so a re-sent message is dropped there. */
  _id: string;
  kind: 'receipt-email';
  to: string;
  subject: string;
  text: string;
  createdAt: Date;
  /** Null until the relay delivered it. */
  deliveredAt: Date | null;
  messageId?: string;
}
