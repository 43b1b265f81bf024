import { describe, expect } from '@jest/globals';
import type { MongoStore } from '../src/index.js';
import { useFailPointFixture } from './fail-points.js';
import { at, claimRequest, newJob } from './jobs.js';

// A claim is a retryable write: when the connection drops, the driver sends it again with the
// same transaction number. If the first attempt had already been applied (the reply was lost),
// the server must answer the retry from its record instead of claiming a second job, and the job
// the first attempt leased must come back to this claim, not stay leased to nobody.
const { failPoints, itFp, storeOf } = useFailPointFixture();
const APP = 'loom-claim-lost-reply';

async function storeWithJobs(count: number): Promise<{ store: MongoStore; ids: string[] }> {
  const store = storeOf(APP, { retention: { completed: false } });
  await store.init();
  // Distinct priorities fix the claim order: ids[0] first.
  const results = await store.enqueue(
    Array.from({ length: count }, (_, i) => newJob({ priority: count - i, maxAttempts: 1 })),
    { now: at(0) },
  );
  return { store, ids: results.map((r) => r.id) };
}

describe('a claim whose connection drops', () => {
  itFp('after the server applied it: the retry returns that job, claimed once (attempt 1), and takes no other', async () => {
    const { store, ids } = await storeWithJobs(2);
    // Applies the write, then closes the connection before the reply.
    await failPoints.set('onPrimaryTransactionalWrite', { times: 1 }, { closeConnection: true });
    const claimed = await store.claim(claimRequest('worker-a', at(1)));
    expect(claimed.map((j) => [j.id, j.attempt])).toEqual([[ids[0], 1]]);
    expect(await store.getJob(ids[0])).toMatchObject({ status: 'running', attempt: 1, lease: { owner: 'worker-a', token: claimed[0].lease!.token } });
    expect(await store.getJob(ids[1])).toMatchObject({ status: 'queued', attempt: 0 });
    const next = await store.claim(claimRequest('worker-b', at(2)));
    expect(next.map((j) => [j.id, j.attempt])).toEqual([[ids[1], 1]]);
  });

  itFp('before the server applied it: the retry claims the job once', async () => {
    const { store, ids } = await storeWithJobs(2);
    await failPoints.set('failCommand', { times: 1 }, { failCommands: ['findAndModify'], closeConnection: true, appName: APP });
    const claimed = await store.claim(claimRequest('worker-a', at(1)));
    expect(claimed.map((j) => [j.id, j.attempt])).toEqual([[ids[0], 1]]);
    expect(await store.getJob(ids[1])).toMatchObject({ status: 'queued', attempt: 0 });
  });

  itFp('in a batch claim after its first statement was applied: every job is claimed once and returned', async () => {
    const { store, ids } = await storeWithJobs(3);
    await failPoints.set('onPrimaryTransactionalWrite', { times: 1 }, { closeConnection: true });
    const claimed = await store.claim(claimRequest('worker-a', at(1), 3));
    expect(claimed.map((j) => j.id).sort()).toEqual([...ids].sort());
    expect(claimed.map((j) => j.attempt)).toEqual([1, 1, 1]);
    for (const job of claimed) expect(await store.getJob(job.id)).toMatchObject({ status: 'running', attempt: 1, lease: { token: job.lease!.token } });
    expect(await store.claim(claimRequest('worker-b', at(2), 3))).toEqual([]);
  });
});
