import { describe, expect } from '@jest/globals';
import { useFailPointFixture } from './fail-points.js';
import { at, newJob } from './jobs.js';

// An enqueue returns only once its jobs are stored as the write concern asks. One job goes as
// `insertOne`, several as one unordered `insertMany`: the driver reports a write-concern failure
// differently for each, and neither may pass for a stored job or for a taken idempotency key.
const { failPoints, itFp, storeOf } = useFailPointFixture();
const APP = 'loom-enqueue-write-errors';
const WRITE_CONCERN_FAILED = { code: 64, codeName: 'WriteConcernFailed', errmsg: 'waiting for replication timed out', errInfo: { wtimeout: true } };

describe('an enqueue whose insert the server reports with a write-concern error', () => {
  for (const count of [1, 3]) {
    itFp(`of ${count} job${count === 1 ? '' : 's'} rejects with that error`, async () => {
      const store = storeOf(APP);
      await store.init();
      await failPoints.set('failCommand', { times: 1 }, { failCommands: ['insert'], writeConcernError: WRITE_CONCERN_FAILED, appName: APP });
      const jobs = Array.from({ length: count }, (_, i) => newJob({ idempotencyKey: `order-${count}-${i}` }));
      await expect(store.enqueue(jobs, { now: at(0) })).rejects.toMatchObject({ code: 64 });
      // Applied but not confirmed: enqueued again with the same keys, the caller gets the stored jobs.
      const again = await store.enqueue(jobs, { now: at(1) });
      expect(again.map((r) => r.deduplicated)).toEqual(jobs.map(() => true));
    });
  }

  itFp('of one job whose key is taken resolves to the job holding it', async () => {
    const store = storeOf(APP);
    await store.init();
    const [first] = await store.enqueue([newJob({ idempotencyKey: 'order-7' })], { now: at(0) });
    expect(await store.enqueue([newJob({ idempotencyKey: 'order-7' })], { now: at(1) })).toEqual([{ id: first!.id, deduplicated: true }]);
  });
});
