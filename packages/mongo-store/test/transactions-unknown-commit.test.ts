import 'reflect-metadata';
import { describe, expect } from '@jest/globals';
import { Job, type JobContext } from '@loom/core';
import { createTestLoom } from '@loom/testing';
import type { ClientSession, Collection, Document } from 'mongodb';
import type { MongoStore } from '../src/index.js';
import { useFailPointFixture } from './fail-points.js';
import { at, claimRequest, newJob } from './jobs.js';

// Transactions whose commit outcome the client cannot know (UnknownTransactionCommitResult: the
// commit's reply lost, or a write concern error after it was applied) and transactions that keep
// meeting write conflicts. The driver retries the commit, or the whole transaction, and the store
// must come out with each effect exactly once: one dead letter, one receipt, one completion.
const { fixture, failPoints, itFp, storeOf } = useFailPointFixture();
const APP = 'loom-unknown-commit';

let database = '';

function newStore(): MongoStore {
  database = fixture.mongo.newDatabaseName('unknown_commit');
  return storeOf(APP, { database, retention: { completed: false, dead: false } });
}

/** The job is in the dead letters once and no longer among the jobs. */
async function expectMovedOnce(s: MongoStore, id: string): Promise<void> {
  expect((await s.listDeadLetters({})).map((d) => d.id)).toEqual([id]);
  expect(await s.getJob(id)).toMatchObject({ status: 'dead', attempt: 1 });
  expect(await fixture.mongo.client.db(database).collection('loom_jobs').countDocuments({})).toBe(0);
}

/** failCommand data making a commit's outcome unknown to the client. */
const UNKNOWN_COMMIT: [string, Document][] = [
  [
    'the commit applied, then a write concern error',
    {
      failCommands: ['commitTransaction'],
      writeConcernError: { code: 64, codeName: 'WriteConcernFailed', errmsg: 'waiting for replication timed out', errInfo: { wtimeout: true } },
    },
  ],
  ['the connection dropped before the commit', { failCommands: ['commitTransaction'], closeConnection: true }],
];

describe('moving a job to the dead letters', () => {
  for (const [what, data] of UNKNOWN_COMMIT) {
    itFp(`when ${what}: one dead letter, the job gone`, async () => {
      const s = newStore();
      await s.init();
      const [{ id }] = await s.enqueue([newJob({ maxAttempts: 1 })], { now: at(0) });
      const [job] = await s.claim(claimRequest());
      await failPoints.set('failCommand', { times: 1 }, { ...data, appName: APP });
      await s.deadLetter({ jobId: id, token: job.lease!.token }, { reason: 'out of attempts', now: at(2) });
      await expectMovedOnce(s, id);
    });
  }

  itFp('through a storm of write conflicts: the driver retries the transaction, one dead letter', async () => {
    const s = newStore();
    await s.init();
    const [{ id }] = await s.enqueue([newJob({ maxAttempts: 1 })], { now: at(0) });
    const [job] = await s.claim(claimRequest());
    // Every statement of the move fails with WriteConflict five times over (TransientTransactionError).
    await failPoints.set('failCommand', { times: 5 }, { failCommands: ['find', 'update', 'delete', 'insert'], errorCode: 112, appName: APP });
    await s.deadLetter({ jobId: id, token: job.lease!.token }, { reason: 'out of attempts', now: at(2) });
    await expectMovedOnce(s, id);
  });
});

let receipts: Collection<{ jobId: string }>;
let callbackRuns = 0;

@Job({ name: 'unknown-commit-receipt', retries: 2 })
class Receipt {
  async run(_payload: undefined, ctx: JobContext): Promise<void> {
    await ctx.transaction(async (session) => {
      callbackRuns++;
      await receipts.insertOne({ jobId: ctx.jobId }, { session: session as ClientSession });
    });
  }
}

describe('ctx.transaction', () => {
  for (const [what, data] of UNKNOWN_COMMIT) {
    itFp(`when ${what}: one receipt, the job completed at attempt 1`, async () => {
      const s = newStore();
      const t = await createTestLoom({ jobs: [Receipt], store: s });
      receipts = s.client.db(fixture.mongo.newDatabaseName('app')).collection('receipts');
      callbackRuns = 0;
      await failPoints.set('failCommand', { times: 1 }, { ...data, appName: APP });
      const { id } = await t.enqueue(Receipt, undefined);
      await t.runUntilIdle();
      expect(await receipts.countDocuments({ jobId: id })).toBe(1);
      expect(await t.getJob(id)).toMatchObject({ status: 'completed', attempt: 1 });
      expect(callbackRuns).toBe(1);
      await t.stop();
    });
  }

  itFp('through a storm of write conflicts: the callback re-runs, its write commits once with the completion', async () => {
    const s = newStore();
    const t = await createTestLoom({ jobs: [Receipt], store: s });
    receipts = s.client.db(fixture.mongo.newDatabaseName('app')).collection('receipts');
    callbackRuns = 0;
    const { id } = await t.enqueue(Receipt, undefined);
    await failPoints.set('failCommand', { times: 4 }, { failCommands: ['insert'], errorCode: 112, appName: APP });
    await t.runUntilIdle();
    expect(await receipts.countDocuments({ jobId: id })).toBe(1);
    expect(await t.getJob(id)).toMatchObject({ status: 'completed', attempt: 1 });
    expect(callbackRuns).toBe(5);
    await t.stop();
  });
});
