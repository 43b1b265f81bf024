/** An email to send. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
  /** Providers that take an idempotency key send one message per key, however often asked. */
  idempotencyKey: string;
}

/** Where email goes. The shop binds {@link FakeMailTransport}; a real app binds its provider's client. */
export abstract class MailTransport {
  /** Sends `mail` once per idempotency key; returns the provider's message id (the same one for a repeat). */
  abstract send(mail: Mail): Promise<{ messageId: string; duplicate: boolean }>;
}
