import 'reflect-metadata';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { enqueueWelcome } from './welcome-fixture.js';

// node:test runs JavaScript: compile first (tsc), then `node --test dist/test/send-welcome.node-test.js`.
void test('retries a failed welcome after the backoff and sends it once (node:test)', async () => {
  const { t, mailer, id } = await enqueueWelcome();
  await t.runUntilIdle(); // attempt 1 fails: retry due in 10s
  assert.equal((await t.getJob(id))?.status, 'queued');
  await t.advance('10s');
  assert.equal((await t.getJob(id))?.status, 'completed');
  assert.deepEqual(mailer.sent, ['ada@example.com']);
  await t.stop();
});
