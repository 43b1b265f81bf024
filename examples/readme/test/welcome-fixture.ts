import { Container } from 'inversify';
import { createTestLoom, type TestLoom } from '@loom/testing';
import { Mailer } from '../src/mailer.js';
import { SendWelcome } from '../src/send-welcome.js';

/** A mailer whose first send fails (an SMTP timeout); it records what it sends after that. */
class FailsOnceMailer extends Mailer {
  sent: string[] = [];
  private calls = 0;
  async send(to: string): Promise<void> {
    if (this.calls++ === 0) throw new Error('SMTP timeout');
    this.sent.push(to);
  }
}

/**
 * The README job test's setup, shared by its vitest and node:test versions (the jest version,
 * send-welcome.test.ts, spells it out): a TestLoom with a mailer that fails once, and one welcome
 * enqueued.
 */
export async function enqueueWelcome(): Promise<{ t: TestLoom; mailer: FailsOnceMailer; id: string }> {
  const mailer = new FailsOnceMailer();
  const container = new Container();
  container.bind(Mailer).toConstantValue(mailer);
  const t = await createTestLoom({ container, jobs: [SendWelcome] });
  const { id } = await t.enqueue(SendWelcome, { userId: 'u1', email: 'ada@example.com' });
  return { t, mailer, id };
}
