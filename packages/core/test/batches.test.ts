import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { Job, MemoryStore, PermanentError, type BatchSummary, type JobContext } from '@loom/core';
import { createTestLoom } from '@loom/testing';

// loom.batches (FLOWS.md, issue 31 item 2) through the public facade, on a MemoryStore and a FakeClock.

const seen: { on: string; payload: unknown; batch: BatchSummary | undefined }[] = [];

@Job({ name: 'invoice', queue: 'billing', retries: 1, backoff: { type: 'fixed', delay: '1s' } })
class SendInvoice {
  async run(p: { orderId: number; fail?: boolean }): Promise<number> {
    if (p.fail) throw new PermanentError(`order ${p.orderId} cannot be invoiced`);
    return p.orderId;
  }
}

@Job({ name: 'invoices-done', queue: 'billing', payload: z.object({ month: z.string() }) })
class InvoicesDone {
  async run(p: { month: string }, ctx: JobContext): Promise<void> {
    seen.push({ on: 'complete', payload: p, batch: ctx.batch });
  }
}

@Job({ name: 'invoices-ok', queue: 'billing' })
class InvoicesOk {
  async run(p: unknown, ctx: JobContext): Promise<void> {
    seen.push({ on: 'success', payload: p, batch: ctx.batch });
  }
}

@Job({ name: 'invoices-failed', queue: 'billing' })
class InvoicesFailed {
  async run(p: unknown, ctx: JobContext): Promise<void> {
    seen.push({ on: 'failure', payload: p, batch: ctx.batch });
  }
}

const JOBS = [SendInvoice, InvoicesDone, InvoicesOk, InvoicesFailed];

describe('loom.batches', () => {
  it('runs onComplete and onFailure once, with the counts and the failed ids in ctx.batch', async () => {
    seen.length = 0;
    const t = await createTestLoom({ jobs: JOBS });
    const batch = await t.batches.create({
      jobs: [1, 2, 3, 4].map((orderId) => ({ job: SendInvoice, payload: { orderId, fail: orderId === 3 } })),
      onComplete: { job: InvoicesDone, payload: { month: '2026-11' } },
      onSuccess: { job: InvoicesOk },
      onFailure: { job: InvoicesFailed, payload: { month: '2026-11' } },
    });
    expect(batch.jobIds).toHaveLength(4);
    expect(await t.batches.get(batch.id)).toMatchObject({ total: 4, pending: 4, completed: 0 });
    expect(await t.jobs.get(batch.jobIds[0]!)).toMatchObject({ batchId: batch.id, name: 'invoice' });
    await t.runUntilIdle();
    const progress = await t.batches.get(batch.id);
    expect(progress).toMatchObject({ total: 4, completed: 3, dead: 1, cancelled: 0, pending: 0 });
    expect(progress?.finishedAt).toEqual(t.clock.now());
    const summary = { id: batch.id, total: 4, completed: 3, dead: 1, cancelled: 0, failedJobIds: [batch.jobIds[2]] };
    expect(seen.sort((a, b) => a.on.localeCompare(b.on))).toEqual([
      { on: 'complete', payload: { month: '2026-11' }, batch: summary },
      { on: 'failure', payload: { month: '2026-11' }, batch: summary },
    ]);
    await t.stop();
  });

  it('runs onSuccess (and not onFailure) when every member completed', async () => {
    seen.length = 0;
    const t = await createTestLoom({ jobs: JOBS });
    const batch = await t.batches.create({
      jobs: [{ job: SendInvoice, payload: { orderId: 1 } }],
      onSuccess: { job: InvoicesOk, payload: 'ok' },
      onFailure: { job: InvoicesFailed },
    });
    await t.runUntilIdle();
    expect(seen).toEqual([{ on: 'success', payload: 'ok', batch: { id: batch.id, total: 1, completed: 1, dead: 0, cancelled: 0, failedJobIds: [] } }]);
    await t.stop();
  });

  it('a cancelled member counts as cancelled and fails the batch', async () => {
    seen.length = 0;
    const t = await createTestLoom({ jobs: JOBS, start: false });
    const batch = await t.batches.create({
      jobs: [
        { job: SendInvoice, payload: { orderId: 1 } },
        { job: SendInvoice, payload: { orderId: 2 } },
      ],
      onFailure: { job: InvoicesFailed },
    });
    await t.jobs.cancel(batch.jobIds[1]!);
    await t.start();
    await t.runUntilIdle();
    expect(seen).toEqual([
      { on: 'failure', payload: undefined, batch: expect.objectContaining({ completed: 1, cancelled: 1, failedJobIds: [batch.jobIds[1]] }) },
    ]);
    await t.stop();
  });

  it('refuses bad input with a typed error and stores nothing', async () => {
    const store = new MemoryStore();
    const t = await createTestLoom({ jobs: JOBS, store, start: false });
    await expect(t.batches.create({ jobs: [{ job: InvoicesDone, payload: { month: 1 as unknown as string } }] })).rejects.toMatchObject({
      code: 'INVALID_PAYLOAD',
    });
    await expect(t.batches.create({ jobs: 'no' as never })).rejects.toMatchObject({ code: 'INVALID_BATCH' });
    await expect(t.batches.create({ jobs: [{ job: SendInvoice, payload: { orderId: 1 } }], onComplete: {} as never })).rejects.toMatchObject({
      code: 'INVALID_BATCH',
    });
    expect((await store.stats()).queues).toEqual({});
    expect(await t.batches.get('nope')).toBeNull();
    await t.stop();
  });

  it('a batch of 100,000 members: each end costs O(1), the callback runs once', async () => {
    seen.length = 0;
    const store = new MemoryStore();
    const t = await createTestLoom({ jobs: JOBS, store, start: false });
    const n = 100_000;
    const batch = await t.batches.create({
      jobs: Array.from({ length: n }, (_, i) => ({ job: SendInvoice, payload: { orderId: i } })),
      onComplete: { job: InvoicesDone, payload: { month: 'big' } },
    });
    expect(batch.jobIds).toHaveLength(n);
    // Completed straight through the store, in chunks (the engine's completion path is covered above).
    const now = t.clock.now();
    for (let done = 0; done < n;) {
      const claimed = await store.claim({
        owner: 'w',
        queues: ['billing'],
        names: ['invoice'],
        limit: 5_000,
        leaseUntil: new Date(now.getTime() + 60_000),
        now,
      });
      await store.completeMany(
        claimed.map((job) => ({ lease: { jobId: job.id, token: job.lease!.token } })),
        now,
      );
      done += claimed.length;
      if (done < n) expect(await t.batches.get(batch.id)).toMatchObject({ completed: done, pending: n - done });
    }
    expect(await t.batches.get(batch.id)).toMatchObject({ total: n, completed: n, pending: 0 });
    await t.start();
    await t.runUntilIdle();
    expect(seen).toEqual([{ on: 'complete', payload: { month: 'big' }, batch: expect.objectContaining({ total: n, completed: n, failedJobIds: [] }) }]);
    await t.stop();
  }, 120_000);
});
