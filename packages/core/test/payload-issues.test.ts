import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { InvalidPayloadError, Job } from '@loom/core';
import { createTestLoom } from '@loom/testing';
import { z } from 'zod';

// An INVALID_PAYLOAD names every schema issue (path and message), not just the first, up to ten.

const Order = z.object({ orderId: z.string(), email: z.email(), totalCents: z.number().int() });

@Job({ name: 'place-order', payload: Order })
class PlaceOrder {
  async run(_order: z.infer<typeof Order>): Promise<void> {}
}

const Wide = z.object(Object.fromEntries(Array.from({ length: 13 }, (_, i) => [`f${i}`, z.string()])));

@Job({ name: 'wide', payload: Wide })
class WideJob {
  async run(_payload: z.infer<typeof Wide>): Promise<void> {}
}

async function refusal(promise: Promise<unknown>): Promise<InvalidPayloadError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InvalidPayloadError);
  return err as InvalidPayloadError;
}

describe('a payload with several schema issues', () => {
  it('lists each with its path; the error path is the first', async () => {
    const t = await createTestLoom({ jobs: [PlaceOrder] });
    const err = await refusal(t.enqueue(PlaceOrder, { orderId: 'o1', email: 'nope', totalCents: 'ten' } as never));
    expect(err.path).toBe('email');
    expect(err.message).toMatch(/^Invalid payload for job "place-order" at email: [^;]*email[^;]*; at totalCents: [^;]*number[^;]*$/i);
    expect(await t.store.listJobs({})).toEqual([]);
    await t.stop();
  });

  it('names the index of a batch in every path', async () => {
    const t = await createTestLoom({ jobs: [PlaceOrder] });
    const err = await refusal(t.enqueueMany(PlaceOrder, [{ orderId: 'a', email: 'a@b.co', totalCents: 1 }, { email: 'x', totalCents: 1.5 } as never]));
    expect(err.path).toBe('[1].orderId');
    expect(err.message).toContain('; at [1].email: ');
    expect(err.message).toContain('; at [1].totalCents: ');
    await t.stop();
  });

  it('shows ten and counts the rest', async () => {
    const t = await createTestLoom({ jobs: [WideJob] });
    const err = await refusal(t.enqueue(WideJob, {} as never));
    for (let i = 0; i < 10; i++) expect(err.message).toContain(`at f${i}: `);
    expect(err.message).not.toContain('at f10: ');
    expect(err.message).toMatch(/; and 3 more$/);
    await t.stop();
  });
});
