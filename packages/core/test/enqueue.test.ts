import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { InvalidPayloadError, Job, LoomError, MemoryStore, PayloadTooLargeError, type JobContext } from '@loom/core';
import { createTestLoom } from '@loom/testing';
import { z } from 'zod';

const Receipt = z.object({ orderId: z.string(), email: z.string().email(), items: z.array(z.unknown()).optional() });

@Job({ name: 'send-receipt', payload: Receipt, idempotencyKey: (p) => `receipt:${p.orderId}` })
class SendReceipt {
  async run(payload: z.infer<typeof Receipt>, _ctx: JobContext): Promise<string> {
    return payload.orderId;
  }
}

const order: string[] = [];
@Job({ name: 'record' })
class Recorder {
  async run(payload: { tag: string }): Promise<void> {
    order.push(payload.tag);
  }
}

@Job({ name: 'no-payload' })
class NoPayload {
  async run(): Promise<void> {}
}

class Money {
  constructor(readonly cents: number) {}
}

async function refusal(promise: Promise<unknown>): Promise<LoomError> {
  try {
    await promise;
  } catch (err) {
    if (LoomError.is(err)) return err;
    throw err;
  }
  throw new Error('enqueue was accepted');
}

describe('enqueue', () => {
  describe('refuses bad payloads with an error naming the path, storing nothing', () => {
    const cyclic: Record<string, unknown> = { orderId: 'o1', email: 'a@b.co' };
    cyclic.items = [cyclic];
    it.each([
      ['a schema violation', { orderId: 'o1', email: 'not-an-email' }, 'email', /email/i],
      ['a missing field', { email: 'a@b.co' }, 'orderId', /string/],
      ['a function', { orderId: 'o1', email: 'a@b.co', items: [{ cb: () => 1 }] }, 'items[0].cb', /is a function/],
      ['a symbol', { orderId: 'o1', email: 'a@b.co', items: [Symbol('s')] }, 'items[0]', /is a symbol/],
      ['a BigInt', { orderId: 'o1', email: 'a@b.co', items: [10n] }, 'items[0]', /BigInt/],
      ['a class instance', { orderId: 'o1', email: 'a@b.co', items: [new Money(5)] }, 'items[0]', /instance of Money/],
      ['a Map', { orderId: 'o1', email: 'a@b.co', items: [new Map()] }, 'items[0]', /instance of Map/],
      ['a cycle', cyclic, 'items[0]', /cycle back to \(root\)/],
    ])('%s', async (_label, payload, path, detail) => {
      const t = await createTestLoom({ jobs: [SendReceipt] });
      const err = await refusal(t.enqueue(SendReceipt, payload as z.infer<typeof Receipt>));
      expect(err).toBeInstanceOf(InvalidPayloadError);
      expect(err.code).toBe('INVALID_PAYLOAD');
      expect((err as InvalidPayloadError).path).toBe(path);
      expect(err.message).toMatch(detail);
      expect(err.message).toContain('job "send-receipt"');
      expect(await t.store.listJobs({})).toEqual([]);
      await t.stop();
    });

    it("a payload over the store's maxPayloadSize: PAYLOAD_TOO_LARGE, saying the limit and what to do", async () => {
      const t = await createTestLoom({ jobs: [SendReceipt], store: new MemoryStore({ maxPayloadSize: 4096 }) });
      const err = await refusal(t.enqueue(SendReceipt, { orderId: 'o1', email: 'a@b.co', items: ['x'.repeat(5000)] } as z.infer<typeof Receipt>));
      expect(err).toBeInstanceOf(PayloadTooLargeError);
      expect(err.code).toBe('PAYLOAD_TOO_LARGE');
      expect(err.message).toMatch(
        /^The payload of job "send-receipt" is \d+ bytes serialized, over the store's maxPayloadSize of 4096 bytes; nothing was stored/,
      );
      expect(err.message).toContain('pass a reference');
      expect(await t.store.listJobs({})).toEqual([]);
      // Just under the limit is stored; a batch with one payload over it stores none.
      await t.enqueue(SendReceipt, { orderId: 'o2', email: 'a@b.co', items: ['x'.repeat(3000)] } as z.infer<typeof Receipt>);
      const many = await refusal(
        t.enqueueMany(SendReceipt, [
          { orderId: 'o3', email: 'a@b.co' },
          { orderId: 'o4', email: 'a@b.co', items: ['x'.repeat(5000)] },
        ] as z.infer<typeof Receipt>[]),
      );
      expect(many.message).toMatch(/^The payload of job "send-receipt" at \[1\] is/);
      expect((await t.store.listJobs({})).map((j) => (j.payload as { orderId: string }).orderId)).toEqual(['o2']);
      await t.stop();
    });

    it('a schema that cannot check synchronously', async () => {
      @Job({ name: 'async-schema', payload: z.object({ n: z.number() }).refine(async () => true) })
      class AsyncSchema {
        async run(_: { n: number }): Promise<void> {}
      }
      const t = await createTestLoom({ jobs: [AsyncSchema] });
      await expect(t.enqueue(AsyncSchema, { n: 1 })).rejects.toThrow(/the payload schema threw: .*payload schemas must be synchronous/);
      expect(await t.store.listJobs({})).toEqual([]);
      await t.stop();
    });

    it('a Date is plain data', async () => {
      const t = await createTestLoom({ jobs: [Recorder] });
      const { id } = await t.enqueue(Recorder, { tag: 'd', at: new Date('2026-01-01T00:00:00Z') } as { tag: string });
      expect((await t.getJob(id))?.payload).toEqual({ tag: 'd', at: new Date('2026-01-01T00:00:00Z') });
      await t.stop();
    });

    it('enqueueMany stores none of a batch with one bad payload, naming its index', async () => {
      const t = await createTestLoom({ jobs: [SendReceipt] });
      const err = await refusal(
        t.enqueueMany(SendReceipt, [
          { orderId: 'a', email: 'a@b.co' },
          { orderId: 'b', email: 'nope' },
        ]),
      );
      expect((err as InvalidPayloadError).path).toBe('[1].email');
      expect(await t.store.listJobs({})).toEqual([]);
      const ok = await t.enqueueMany(SendReceipt, [
        { orderId: 'a', email: 'a@b.co' },
        { orderId: 'b', email: 'b@b.co' },
      ]);
      expect(ok.map((r) => r.deduplicated)).toEqual([false, false]);
      await t.stop();
    });
  });

  describe('idempotency', () => {
    it('returns the existing job for a taken key and stores nothing new', async () => {
      const t = await createTestLoom({ jobs: [SendReceipt] });
      const first = await t.enqueue(SendReceipt, { orderId: 'o1', email: 'a@b.co' });
      const second = await t.enqueue(SendReceipt, { orderId: 'o1', email: 'other@b.co' });
      expect(second).toEqual({ id: first.id, deduplicated: true });
      expect(await t.store.listJobs({})).toHaveLength(1);
      expect((await t.getJob(first.id))?.idempotencyKey).toBe('receipt:o1');
      const overridden = await t.enqueue(SendReceipt, { orderId: 'o1', email: 'a@b.co' }, { idempotencyKey: 'manual' });
      expect(overridden.deduplicated).toBe(false);
      await t.stop();
    });

    it.each([
      ['an object', { $ne: null }, /got object, not a string/],
      ['an empty string', '', /it is empty/],
      ['a number', 42, /got number/],
    ])('refuses %s as a key', async (_label, key, detail) => {
      const t = await createTestLoom({ jobs: [Recorder] });
      const err = await refusal(t.enqueue(Recorder, { tag: 'x' }, { idempotencyKey: key as string }));
      expect(err.code).toBe('INVALID_IDEMPOTENCY_KEY');
      expect(err.message).toMatch(detail);
      expect(await t.store.listJobs({})).toEqual([]);
      await t.stop();
    });

    it('refuses conflicting or invalid timing options', async () => {
      const t = await createTestLoom({ jobs: [Recorder] });
      await expect(t.enqueue(Recorder, { tag: 'x' }, { delay: '1s', runAt: new Date() })).rejects.toThrow(/either `delay` or `runAt`/);
      await expect(t.enqueue(Recorder, { tag: 'x' }, { delay: 'later' })).rejects.toThrow(/Invalid delay/);
      await expect(t.enqueue(Recorder, { tag: 'x' }, { session: {} })).rejects.toThrow(/session was not created by this MemoryStore/);
      expect(await t.store.listJobs({})).toEqual([]);
      await t.stop();
    });
  });

  it('runs higher priorities first, then earlier runAt, then FIFO', async () => {
    order.length = 0;
    const t = await createTestLoom({ jobs: [Recorder], concurrency: 1, start: false });
    await t.enqueue(Recorder, { tag: 'low' }, { priority: -1 });
    await t.enqueue(Recorder, { tag: 'normal-1' });
    await t.enqueue(Recorder, { tag: 'high' }, { priority: 10 });
    await t.enqueue(Recorder, { tag: 'normal-2' });
    await t.loom.start();
    await t.runUntilIdle();
    expect(order).toEqual(['high', 'normal-1', 'normal-2', 'low']);
    await t.stop();
  });

  it('holds delayed jobs until they are due', async () => {
    order.length = 0;
    const t = await createTestLoom({ jobs: [Recorder] });
    await t.enqueue(Recorder, { tag: 'in-5m' }, { delay: '5m' });
    await t.enqueue(Recorder, { tag: 'at-2m' }, { runAt: new Date(t.clock.now().getTime() + 120_000) });
    await t.enqueue(Recorder, { tag: 'now' });
    await t.runUntilIdle();
    expect(order).toEqual(['now']);
    await t.advance(119_999);
    expect(order).toEqual(['now']);
    await t.advance(1);
    expect(order).toEqual(['now', 'at-2m']);
    await t.advance('3m');
    expect(order).toEqual(['now', 'at-2m', 'in-5m']);
    await t.stop();
  });

  it('checks payload types at compile time', async () => {
    const t = await createTestLoom({ jobs: [SendReceipt, NoPayload] });
    // @ts-expect-error orderId must be a string
    await expect(t.enqueue(SendReceipt, { orderId: 1, email: 'a@b.co' })).rejects.toThrow(InvalidPayloadError);
    // @ts-expect-error the payload is required
    await expect(t.loom.enqueue(SendReceipt)).rejects.toThrow(InvalidPayloadError);
    await t.loom.enqueue(NoPayload);
    await t.loom.enqueue(SendReceipt, { orderId: 'o9', email: 'a@b.co' }, { priority: 3 });
    await t.stop();
  });
});
