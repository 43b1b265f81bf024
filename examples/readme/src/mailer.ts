/** The mail provider the README's first job talks to (bind a real client in your app). */
export abstract class Mailer {
  abstract send(to: string, text: string, options: { idempotencyKey: string }): Promise<void>;
}

/** Prints instead of sending. */
export class ConsoleMailer extends Mailer {
  async send(to: string, text: string): Promise<void> {
    console.log(`mail to ${to}: ${text}`);
  }
}
