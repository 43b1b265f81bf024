import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, MemoryStore, type JobContext, type RunRecord } from '@loom/core';
import { createTestLoom, FakeClock, replayRun } from '@loom/testing';

// loom jobs export + replayRun (issue 35, item 3): a failure seen in production becomes a deterministic test.

const calls: string[] = [];
let shippingFixed = false;

@Job({ name: 'replay-fulfil', retries: 1 })
class Fulfil {
  async run(p: { orderId: string }, ctx: JobContext) {
    const charge = await ctx.step('charge', () => (calls.push('charge'), { chargeId: `ch-${p.orderId}-${calls.length}` }));
    await ctx.sleep('pickup', '1h');
    const parcel = await ctx.step('ship', () => {
      calls.push('ship');
      if (!shippingFixed) throw new Error('the carrier API changed');
      return `parcel ${p.orderId}`;
    });
    return { charge, parcel };
  }
}

@Job({ name: 'replay-other' })
class Other {
  async run() {}
}

/** A production run that charged, slept and then died in `ship`, exported as `loom jobs export` writes it. */
async function productionRecord(): Promise<RunRecord> {
  const t = await createTestLoom({ jobs: [Fulfil], store: new MemoryStore(), clock: new FakeClock() });
  try {
    const { id } = await t.enqueue(Fulfil, { orderId: 'o1' });
    await t.runUntilIdle();
    await t.advance('2h');
    expect((await t.getJob(id))?.status).toBe('dead');
    return JSON.parse(JSON.stringify(await t.jobs.export(id))) as RunRecord;
  } finally {
    await t.stop();
  }
}

describe('replayRun', () => {
  it('replays an exported run: recorded steps answer from the record, the rest run (deterministically, under a fake clock)', async () => {
    calls.length = 0;
    shippingFixed = false;
    const record = await productionRecord();
    expect(record).toMatchObject({ format: 'loom-run', version: 1, job: { name: 'replay-fulfil', status: 'dead' }, payload: { orderId: 'o1' } });
    expect(record.steps.map((s) => [s.name, s.kind, s.status])).toEqual([
      ['charge', 'step', 'completed'],
      ['pickup', 'sleep', 'completed'],
      ['ship', 'step', 'pending'],
    ]);
    expect(record.errors.map((e) => e.message)).toEqual(['the carrier API changed', 'the carrier API changed']);
    calls.length = 0;

    // The bug reproduces: charge answers from the record, ship fails again.
    const failing = await replayRun(Fulfil, record);
    expect(failing).toMatchObject({ status: 'dead', error: { message: 'the carrier API changed' }, stepsRun: [] });
    expect(calls).toEqual(['ship', 'ship']);

    // The fix passes; the charge is still the recorded one.
    shippingFixed = true;
    calls.length = 0;
    const fixed = await replayRun(Fulfil, record);
    expect(fixed).toEqual({ status: 'completed', result: { charge: { chargeId: 'ch-o1-1' }, parcel: 'parcel o1' }, stepsRun: ['ship'] });
    expect(calls).toEqual(['ship']);

    // Told to re-run a step, it runs it for real.
    calls.length = 0;
    expect(await replayRun(Fulfil, record, { rerunSteps: ['charge'] })).toMatchObject({ status: 'completed', stepsRun: ['charge', 'ship'] });
    expect(calls).toEqual(['charge', 'ship']);
  });

  it('refuses a record of another job, or not a run record, before running anything', async () => {
    shippingFixed = false;
    const record = await productionRecord();
    calls.length = 0;
    await expect(replayRun(Other, record)).rejects.toMatchObject({ code: 'RUN_RECORD_MISMATCH', message: expect.stringContaining('"replay-fulfil"') });
    await expect(replayRun(Fulfil, { ...record, format: 'other' } as unknown as RunRecord)).rejects.toMatchObject({ code: 'RUN_RECORD_MISMATCH' });
    await expect(replayRun(Fulfil, { ...record, version: 99 })).rejects.toMatchObject({ code: 'RUN_RECORD_MISMATCH' });
    expect(calls).toEqual([]);
  });
});
