import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, MemoryStore } from '@loom/core';
import { CaptureLogger, FakeClock } from '@loom/testing';
import { buildEngine } from '../src/engine/engine.js';

@Job({ name: 'nightly', idempotencyKey: () => 'ignored-for-fires' })
class Nightly {
  async run(): Promise<void> {}
}

describe('enqueueFire (the cron seam)', () => {
  it('enqueues one job per fire time, keyed cron:<job>:<fire ISO>, scheduledFor = runAt = the fire time', async () => {
    const store = new MemoryStore();
    const engine = await buildEngine({ store, jobs: [Nightly], clock: new FakeClock('2026-01-02T00:00:00Z'), logger: new CaptureLogger() });
    const fireAt = new Date('2026-01-01T03:00:00Z');
    const first = await engine.enqueuer.enqueueFire('nightly', fireAt, undefined);
    const again = await engine.enqueuer.enqueueFire('nightly', fireAt, undefined);
    expect(again).toEqual({ id: first.id, deduplicated: true });
    const job = await store.getJob(first.id);
    expect(job).toMatchObject({ idempotencyKey: 'cron:nightly:2026-01-01T03:00:00.000Z', scheduledFor: fireAt, runAt: fireAt });
    await expect(engine.enqueuer.enqueueFire('unknown', fireAt, undefined)).rejects.toThrow(/no job named "unknown"/);
  });
});
