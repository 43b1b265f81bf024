import { afterEach, describe, expect, it } from '@jest/globals';
import { MongoServerError, type Collection } from 'mongodb';
import { CaptureLogger } from '@loom/testing';
import { claimJobs } from '../src/claims/claims.js';
import type { JobDocument } from '../src/schema/documents.js';
import type { MongoStore } from '../src/index.js';
import { useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

// A claim that meets a job another client's open transaction has written waits for that
// transaction, as on mongod (a worker that died inside ctx.transaction holds its job's document
// until the transaction lifetime ends). Given a server time limit, the claim must stop waiting at
// MaxTimeMSExpired — claiming nothing this time, logged, not a failed claim — leave the job as it
// was, and the next claim after the transaction must take it normally. (The time limit is put on
// the claim's command here, at the driver's API; MongoStore's own is its claimTimeout option, see
// claim-timeout.test.ts.)
const fixture = useMongoFixture();

let store: MongoStore | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

/** The jobs collection, with `maxTimeMS` on every findOneAndUpdate (the single-job claim). */
function withTimeLimit(jobs: Collection<JobDocument>, maxTimeMS: number): Collection<JobDocument> {
  return new Proxy(jobs, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== 'findOneAndUpdate' || typeof value !== 'function') return value;
      return (filter: unknown, update: unknown, options: object = {}) =>
        (value as (...a: unknown[]) => unknown).call(target, filter, update, { ...options, maxTimeMS });
    },
  });
}

describe('a claim under lock contention', () => {
  it('with maxTimeMS stops at MaxTimeMSExpired (50): claims nothing, logged, changes nothing, and the job is claimed once the lock is gone', async () => {
    const database = fixture.mongo.newDatabaseName('locked');
    store = fixture.newStore({ database });
    await store.init();
    const [{ id }] = await store.enqueue([newJob()], { now: at(0) });
    const jobs = fixture.mongo.client.db(database).collection<JobDocument>('loom_jobs');
    const session = fixture.mongo.client.startSession();
    try {
      session.startTransaction();
      await jobs.updateOne({}, { $set: { note: 'held by a transaction' } } as never, { session });
      const logger = new CaptureLogger();
      expect(await claimJobs(withTimeLimit(jobs, 300), claimRequest('worker-a', at(1)), logger)).toEqual([]);
      const [warning] = logger.at('warn');
      expect(warning?.msg).toMatch(/a claim ran past its maxTimeMS/);
      expect(warning?.fields.err).toBeInstanceOf(MongoServerError);
      expect((warning?.fields.err as MongoServerError).code).toBe(50);
      await session.commitTransaction();
    } finally {
      await session.endSession();
    }
    expect(await store.getJob(id)).toMatchObject({ status: 'queued', attempt: 0 });
    const [job] = await store.claim(claimRequest('worker-a', at(2)));
    expect(job).toMatchObject({ id, attempt: 1 });
  });
});
