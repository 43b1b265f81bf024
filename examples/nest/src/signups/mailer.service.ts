import { Injectable } from '@nestjs/common';

/** A mail sent by {@link Mailer}. */
export interface SentMail {
  to: string;
  subject: string;
}

/**
 * A stand-in for a mail provider, in process so the example needs no network. Addresses at
 * `flaky.example` are refused the first 3 times, which outlasts SendWelcome's 3 attempts: those
 * jobs end in the dead letters, and a retry from there gets through.
 */
@Injectable()
export class Mailer {
  readonly sent: SentMail[] = [];
  private readonly refusals = new Map<string, number>();

  async send(to: string, subject: string): Promise<void> {
    if (to.endsWith('@flaky.example')) {
      const refused = this.refusals.get(to) ?? 0;
      if (refused < 3) {
        this.refusals.set(to, refused + 1);
        throw new Error(`mail server refused ${to} (try ${refused + 1})`);
      }
    }
    this.sent.push({ to, subject });
  }
}
