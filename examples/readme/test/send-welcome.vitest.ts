import 'reflect-metadata';
import { expect, it } from 'vitest';
import { enqueueWelcome } from './welcome-fixture.js';

it('retries a failed welcome after the backoff and sends it once (vitest)', async () => {
  const { t, mailer, id } = await enqueueWelcome();
  await t.runUntilIdle(); // attempt 1 fails: retry due in 10s
  expect((await t.getJob(id))?.status).toBe('queued');
  await t.advance('10s');
  expect((await t.getJob(id))?.status).toBe('completed');
  expect(mailer.sent).toEqual(['ada@example.com']);
  await t.stop();
});
