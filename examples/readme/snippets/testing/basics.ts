import { expect } from '@jest/globals';
import type { Container } from 'inversify';
import { Job } from '@loom/core';

@Job({ name: 'send-receipt' })
class SendReceipt {
  async run(_payload: { orderId: string }): Promise<void> {}
}
declare const container: Container;
declare const payload: { orderId: string };

import { createTestLoom, FakeClock } from '@loom/testing';

const t = await createTestLoom({ container, jobs: [SendReceipt] }); // MemoryStore + FakeClock
const { id } = await t.enqueue(SendReceipt, payload);
await t.runUntilIdle(); // runs everything due now, and the follow-ups it causes
await t.advance('10m'); // moves time through due retries, delays, sleeps, leases, cron
expect((await t.getJob(id))?.status).toBe('completed');
await t.stop();

export { FakeClock };
