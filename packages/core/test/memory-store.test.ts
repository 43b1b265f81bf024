import { describe, expect, it } from '@jest/globals';
import { LoomError, MemoryStore, MEMORY_STORE_ERROR_HISTORY, type NewJob } from '@loom/core';

const REFERENCE = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number): Date => new Date(REFERENCE + ms);
const T0 = at(0);

function newJob(overrides: Partial<NewJob> = {}): NewJob {
  return { name: 'send', queue: 'default', payload: { n: 1 }, priority: 0, runAt: T0, maxAttempts: 3, ...overrides };
}

async function claimOne(store: MemoryStore, now: Date, leaseMs = 30_000) {
  const [job] = await store.claim({ owner: 'w1', queues: ['default'], names: ['send'], limit: 1, leaseUntil: new Date(now.getTime() + leaseMs), now });
  if (!job?.lease) throw new Error('expected a claimable job');
  return { job, lease: { jobId: job.id, token: job.lease.token } };
}

describe('MemoryStore', () => {
  it('runs a job through enqueue, claim and complete', async () => {
    const store = new MemoryStore();
    const [{ id }] = await store.enqueue([newJob()], { now: T0 });
    const { job, lease } = await claimOne(store, T0);
    expect(job.id).toBe(id);
    await store.complete(lease, { result: { ok: true }, now: at(1) });
    const done = await store.getJob(id);
    expect(done).toMatchObject({ status: 'completed', result: { ok: true }, attempt: 1 });
    expect(done?.finishedAt).toEqual(at(1));
  });
});
