import 'reflect-metadata';
import { expect, it } from '@jest/globals';
import { Container } from 'inversify';
import { createTestLoom } from '@loom/testing';
import { Mailer } from '../src/mailer.js';
import { SendWelcome } from '../src/send-welcome.js';

class FlakyMailer extends Mailer {
  sent: string[] = [];
  private calls = 0;
  async send(to: string): Promise<void> {
    if (++this.calls === 1) throw new Error('SMTP timeout');
    this.sent.push(to);
  }
}

it('retries a failed welcome after the backoff and sends it once', async () => {
  const mailer = new FlakyMailer();
  const container = new Container();
  container.bind(Mailer).toConstantValue(mailer);
  const t = await createTestLoom({ container, jobs: [SendWelcome] }); // MemoryStore + FakeClock

  const { id } = await t.enqueue(SendWelcome, { userId: 'u1', email: 'ada@example.com' });
  const again = await t.enqueue(SendWelcome, { userId: 'u1', email: 'ada@example.com' });
  expect(again).toEqual({ id, deduplicated: true });

  await t.runUntilIdle(); // attempt 1 fails: retry due in 10s
  expect((await t.getJob(id))?.status).toBe('queued');
  await t.advance('10s'); // time moves only when the test says so
  expect((await t.getJob(id))?.status).toBe('completed');
  expect(mailer.sent).toEqual(['ada@example.com']);
  await t.stop();
});
