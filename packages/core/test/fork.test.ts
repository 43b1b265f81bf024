import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, MemoryStore, type JobContext } from '@loom/core';
import { createTestLoom, FakeClock } from '@loom/testing';

// loom.jobs.fork (issue 35, item 2): "the charge succeeded, the shipping step had a bug, we deployed a fix".

const calls: string[] = [];
let shippingFixed = false;

@Job({ name: 'fork-fulfil', retries: 0 })
class Fulfil {
  async run(p: { orderId: string; address: string }, ctx: JobContext) {
    const charge = await ctx.step('charge', () => (calls.push(`charge ${p.orderId}`), { chargeId: `ch-${p.orderId}` }));
    await ctx.sleep('pickup', '1h');
    const parcel = await ctx.step('ship', () => {
      calls.push(`ship ${p.address}`);
      if (!shippingFixed) throw new Error('the carrier API changed');
      return `parcel to ${p.address}`;
    });
    await ctx.step('mail', () => void calls.push('mail'));
    return { charge, parcel };
  }
}

describe('loom.jobs.fork', () => {
  it('keeps the steps before fromStep, runs the rest (with a new payload when given), and leaves the original as it was', async () => {
    calls.length = 0;
    shippingFixed = false;
    const t = await createTestLoom({ jobs: [Fulfil], store: new MemoryStore(), clock: new FakeClock() });
    try {
      const { id } = await t.enqueue(Fulfil, { orderId: 'o1', address: 'old street' });
      await t.runUntilIdle();
      await t.advance('1h');
      const original = await t.getJob(id);
      expect(original).toMatchObject({ status: 'dead' });
      expect(calls).toEqual(['charge o1', 'ship old street']);

      shippingFixed = true; // deploy the fix
      const fork = await t.jobs.fork(id, { fromStep: 'ship', payload: { orderId: 'o1', address: 'new street' } });
      expect(fork.keptSteps).toEqual(['charge', 'pickup']);
      await t.runUntilIdle();
      const forked = await t.getJob(fork.id);
      expect(forked).toMatchObject({
        status: 'completed',
        forkedFrom: id,
        payload: { orderId: 'o1', address: 'new street' },
        result: { charge: { chargeId: 'ch-o1' }, parcel: 'parcel to new street' },
      });
      // The charge is not made again, the pickup sleep is not slept again.
      expect(calls).toEqual(['charge o1', 'ship old street', 'ship new street', 'mail']);
      expect(await t.getJob(id)).toEqual(original);

      // Without a payload the fork keeps the original's; from the first step it keeps nothing.
      const again = await t.jobs.fork(id, { fromStep: 'charge' });
      expect(again.keptSteps).toEqual([]);
      await t.runUntilIdle();
      await t.advance('1h');
      expect(await t.getJob(again.id)).toMatchObject({ status: 'completed', payload: { orderId: 'o1', address: 'old street' } });
      expect(calls.slice(4)).toEqual(['charge o1', 'ship old street', 'mail']);
    } finally {
      await t.stop();
    }
  });

  it('refuses an unknown job or step and stores nothing', async () => {
    const store = new MemoryStore();
    const t = await createTestLoom({ jobs: [Fulfil], store, clock: new FakeClock() });
    try {
      await expect(t.jobs.fork('nope', { fromStep: 'ship' })).rejects.toMatchObject({ code: 'JOB_NOT_FOUND' });
      const { id } = await t.enqueue(Fulfil, { orderId: 'o2', address: 'x' });
      await expect(t.jobs.fork(id, { fromStep: 'ship' })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: expect.stringContaining('recorded no step "ship"'),
      });
      await expect(t.jobs.fork(id, { fromStep: '' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect(await store.listJobs({})).toHaveLength(1);
    } finally {
      await t.stop();
    }
  });
});
