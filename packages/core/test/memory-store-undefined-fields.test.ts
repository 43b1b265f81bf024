import { describe, expect, it } from '@jest/globals';
import { MemoryStore } from '@loom/core';

const now = new Date('2026-01-01T00:00:00Z');
const newJob = (payload: unknown) => ({ name: 'a', queue: 'default', payload, priority: 0, runAt: now, maxAttempts: 3 });

describe('MemoryStore copies', () => {
  it('drop fields holding undefined, as the plain-data rule says, so a finished job shows no lease field at all', async () => {
    const store = new MemoryStore();
    const [{ id }] = await store.enqueue([newJob({ keep: 1, gone: undefined })], { now });
    const [claimed] = await store.claim({ owner: 'w', queues: ['default'], names: ['a'], limit: 1, leaseUntil: new Date(now.getTime() + 30_000), now });
    expect(claimed.payload).toStrictEqual({ keep: 1 });
    await store.complete({ jobId: id, token: claimed.lease!.token }, { now });
    const done = await store.getJob(id);
    expect(done!.status).toBe('completed');
    expect(Object.keys(done!)).not.toContain('lease');
  });
});
