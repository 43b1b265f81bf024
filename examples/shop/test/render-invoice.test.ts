import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { createTestLoom } from '@loom/testing';
import { RenderInvoice } from '../src/jobs/render-invoice.js';
import { SANDBOX_MODULE } from '../src/shop-jobs.js';

// The shop's sandboxed job, in a real sandbox thread (built by src/sandbox-container.ts) and in-line
// (the test kit's default): the same result either way.
describe('render-invoice (sandboxed)', () => {
  const input = { orderId: 'o-1', lines: [{ sku: 'mug', quantity: 2, priceCents: 1200 }] };

  for (const sandbox of [{ module: SANDBOX_MODULE, threads: 1 }, 'inline' as const]) {
    it(`renders an invoice ${sandbox === 'inline' ? 'in-line' : 'in a sandbox thread'}`, async () => {
      const t = await createTestLoom({ jobs: [RenderInvoice], sandbox, realIoTimeout: '60s' });
      try {
        const { id } = await t.enqueue(RenderInvoice, input);
        await t.runUntilIdle();
        const job = await t.getJob(id);
        expect(job?.status).toBe('completed');
        expect(job?.result).toMatchObject({ orderId: 'o-1', pages: 1, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
      } finally {
        await t.stop();
      }
    });
  }
});
