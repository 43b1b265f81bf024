import { describe, expect, it } from '@jest/globals';
import { MemoryStore, type JobRecord, type LeaseRef } from '@loom/core';

// Issue 28 item 2, MemoryStore side: one completeMany batch may carry a job twice, under the token
// that holds its lease and under a stale one (a run whose lease was taken over) or a made-up one.
// Only the holder's item completes the job; every other reports 'lost' and changes nothing.

const REFERENCE = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number): Date => new Date(REFERENCE + ms);
const LEASE_MS = 30_000;

async function claimOne(store: MemoryStore, now: Date): Promise<{ job: JobRecord; lease: LeaseRef }> {
  const [job] = await store.claim({ owner: 'w', queues: ['default'], names: ['send'], limit: 1, now, leaseUntil: new Date(now.getTime() + LEASE_MS) });
  if (!job?.lease) throw new Error('expected a claimable job');
  return { job, lease: { jobId: job.id, token: job.lease.token } };
}

/** A job claimed, its lease run out, and claimed again: the first lease is stale, the second holds it. */
async function takenOver(): Promise<{ store: MemoryStore; id: string; stale: LeaseRef; holder: LeaseRef }> {
  const store = new MemoryStore();
  await store.enqueue([{ name: 'send', queue: 'default', payload: null, priority: 0, runAt: at(0), maxAttempts: 3 }], { now: at(0) });
  const first = await claimOne(store, at(0));
  const second = await claimOne(store, at(LEASE_MS + 1_000));
  expect(second.job.id).toBe(first.job.id);
  return { store, id: first.job.id, stale: first.lease, holder: second.lease };
}

describe('MemoryStore completeMany with one job twice in the batch', () => {
  it.each([
    ['the holder first, then a stale token', (l: { stale: LeaseRef; holder: LeaseRef }) => [l.holder, l.stale], ['completed', 'lost']],
    ['a stale token first, then the holder', (l: { stale: LeaseRef; holder: LeaseRef }) => [l.stale, l.holder], ['lost', 'completed']],
    [
      'the holder first, then a made-up token',
      (l: { stale: LeaseRef; holder: LeaseRef }) => [l.holder, { jobId: l.holder.jobId, token: 'made-up' }],
      ['completed', 'lost'],
    ],
    [
      'a made-up token first, then the holder',
      (l: { stale: LeaseRef; holder: LeaseRef }) => [{ jobId: l.holder.jobId, token: 'made-up' }, l.holder],
      ['lost', 'completed'],
    ],
    ['the holder twice', (l: { stale: LeaseRef; holder: LeaseRef }) => [l.holder, l.holder], ['completed', 'lost']],
  ])('%s: only the holder completes it', async (_, leases, expected) => {
    const { store, id, stale, holder } = await takenOver();
    const items = leases({ stale, holder }).map((lease) => ({ lease, result: lease === holder ? 'holder' : 'other' }));
    const outcomes = await store.completeMany(items, at(LEASE_MS + 2_000));
    expect(outcomes).toEqual(expected);
    const job = await store.getJob(id);
    expect(job).toMatchObject({ status: 'completed', attempt: 2, finishedAt: at(LEASE_MS + 2_000) });
    // The result is the first holder's item's (a second item of the holder is lost, not applied).
    expect(job?.result).toBe('holder');
  });

  it('reports lost for every item when no token holds the lease, changing nothing', async () => {
    const { store, id, stale } = await takenOver();
    const before = await store.getJob(id);
    const outcomes = await store.completeMany([{ lease: stale }, { lease: { jobId: id, token: 'made-up' } }], at(LEASE_MS + 2_000));
    expect(outcomes).toEqual(['lost', 'lost']);
    expect(await store.getJob(id)).toEqual(before);
  });
});
