import { describe, expect, it } from '@jest/globals';
import { ObjectId } from 'mongodb';
import type { MongoStore } from '../src/index.js';
import { useFailPointFixture } from './fail-points.js';
import { at, claimRequest, newJob } from './jobs.js';

// completeMany sends the completions of jobs without a result as one pair of `updateMany`
// statements for the whole batch (complete-many.ts). What MongoDB-specific behaviour that pair
// must keep: retention holds (a held job keeps its finish time aside), and a completion whose
// connection drops is sent again (a bulk with `updateMany` is no retryable write for the driver).
const { fixture, failPoints, itFp, storeOf } = useFailPointFixture();
const APP = 'loom-complete-many';

let database = '';
async function openStore(): Promise<MongoStore> {
  database = fixture.mongo.newDatabaseName('complete-many');
  const store = storeOf(APP, { database, retention: { completed: false } });
  await store.init();
  return store;
}

describe('completeMany of jobs without a result', () => {
  it('keeps the finish time of retention-held jobs aside and sets it on the others, in one batch', async () => {
    const s = await openStore();
    // Children (parentId set) are held while their parent has not finished.
    const [parent] = await s.enqueue([newJob({ name: 'parent' })], { now: at(0) });
    await s.enqueue([newJob(), newJob({ parentId: parent!.id }), newJob(), newJob({ parentId: parent!.id })], { now: at(0) });
    const claimed = await s.claim(claimRequest('worker-a', at(1), 4));
    expect(claimed).toHaveLength(4);
    const outcomes = await s.completeMany(
      claimed.map((job) => ({ lease: { jobId: job.id, token: job.lease!.token } })),
      at(10),
    );
    expect(outcomes).toEqual(['completed', 'completed', 'completed', 'completed']);
    const jobs = fixture.mongo.client.db(database).collection('loom_jobs');
    for (const job of claimed) {
      expect(await s.getJob(job.id)).toMatchObject({ status: 'completed', finishedAt: at(10) });
      const stored = await jobs.findOne({ _id: new ObjectId(job.id) });
      if (job.parentId === undefined) {
        expect(stored).toMatchObject({ finishedAt: at(10) });
        expect(stored?.heldFinishedAt).toBeUndefined();
      } else {
        expect(stored).toMatchObject({ heldFinishedAt: at(10), holdForParent: true });
        expect(stored?.finishedAt).toBeUndefined();
      }
    }
  });

  itFp('sends the batch again when its connection dropped before the server applied it: every job completed', async () => {
    const s = await openStore();
    await s.enqueue([newJob(), newJob(), newJob()], { now: at(0) });
    const claimed = await s.claim(claimRequest('worker-a', at(1), 3));
    expect(claimed).toHaveLength(3);
    await failPoints.set('failCommand', { times: 1 }, { failCommands: ['update'], closeConnection: true, appName: APP });
    const outcomes = await s.completeMany(
      claimed.map((job) => ({ lease: { jobId: job.id, token: job.lease!.token } })),
      at(10),
    );
    expect(outcomes).toEqual(['completed', 'completed', 'completed']);
    for (const job of claimed) expect(await s.getJob(job.id)).toMatchObject({ status: 'completed', finishedAt: at(10) });
  });
});

describe('completeMany when its bulk write fails as a whole', () => {
  // A step-down, or a statement past its maxTimeMS, fails the whole update command (ok: 0). The
  // driver still raises a MongoBulkWriteError, with no write error of its own: that is a failed
  // call to retry, not a batch whose statements matched nothing (the jobs are still ours).
  itFp('sends the batch again after a step-down interrupted it: every job completed by the batch, not one by one', async () => {
    database = fixture.mongo.newDatabaseName('complete-many');
    const s = storeOf(APP, { database, retention: { completed: false }, clientOptions: { appName: APP, monitorCommands: true } });
    await s.init();
    await s.enqueue([newJob(), newJob(), newJob()], { now: at(0) });
    const claimed = await s.claim(claimRequest('worker-a', at(1), 3));
    expect(claimed).toHaveLength(3);
    const writes: string[] = [];
    s.client.on('commandStarted', (event) => {
      if (['update', 'findAndModify'].includes(event.commandName)) writes.push(event.commandName);
    });
    await failPoints.set('failCommand', { times: 1 }, { failCommands: ['update'], errorCode: 11602, errorLabels: ['RetryableWriteError'], appName: APP });
    const outcomes = await s.completeMany(
      claimed.map((job) => ({ lease: { jobId: job.id, token: job.lease!.token } })),
      at(10),
    );
    expect(outcomes).toEqual(['completed', 'completed', 'completed']);
    // The interrupted bulk and its one resend; a failed call taken for "nothing matched" went on job by job.
    expect(writes).toEqual(['update', 'update']);
    for (const job of claimed) expect(await s.getJob(job.id)).toMatchObject({ status: 'completed', finishedAt: at(10) });
  });
});

describe('completeMany reports completed only under the token that holds the lease', () => {
  it('a stale and a made-up token of a job the batch completes under its current token are lost', async () => {
    const s = await openStore();
    await s.enqueue([newJob()], { now: at(0) });
    const [taken] = await s.claim(claimRequest('worker-a', at(1), 1));
    // worker-a's lease runs out (30 s); worker-b takes `taken` over under a new token.
    const [again] = await s.claim(claimRequest('worker-b', at(40_000), 1));
    expect(again?.id).toBe(taken!.id);
    const outcomes = await s.completeMany(
      [
        { lease: { jobId: taken!.id, token: again!.lease!.token } },
        { lease: { jobId: taken!.id, token: taken!.lease!.token } },
        { lease: { jobId: taken!.id, token: 'made-up-token' } },
      ],
      at(40_001),
    );
    expect(outcomes).toEqual(['completed', 'lost', 'lost']);
    expect(await s.getJob(taken!.id)).toMatchObject({ status: 'completed', finishedAt: at(40_001) });
  });

  it('a stale token is lost even when the new holder completed the job at the same instant', async () => {
    const s = await openStore();
    await s.enqueue([newJob()], { now: at(0) });
    const [taken] = await s.claim(claimRequest('worker-a', at(1), 1));
    const [again] = await s.claim(claimRequest('worker-b', at(40_000), 1));
    await s.enqueue([newJob({ name: 'other' })], { now: at(40_000) });
    const [other] = await s.claim({ ...claimRequest('worker-a', at(40_000), 1), names: ['other'] });
    await s.complete({ jobId: again!.id, token: again!.lease!.token }, { now: at(40_001) });
    const outcomes = await s.completeMany(
      [{ lease: { jobId: taken!.id, token: taken!.lease!.token } }, { lease: { jobId: other!.id, token: other!.lease!.token } }],
      at(40_001),
    );
    expect(outcomes).toEqual(['lost', 'completed']);
    expect(await s.getJob(other!.id)).toMatchObject({ status: 'completed', finishedAt: at(40_001) });
  });
});
