import { describe, expect, it } from '@jest/globals';
import { LoomError } from '@loom/core';
import { CaptureLogger } from '@loom/testing';
import { MongoNetworkError, type Collection, type Document } from 'mongodb';
import { claimJobs } from '../src/claims/claims.js';
import type { FlowDocument, JobDocument } from '../src/schema/documents.js';
import { MongoFlowClaims } from '../src/claims/flow-claims.js';
import { FlowPermits } from '../src/flow/flow-permits.js';
import type { MongoStore } from '../src/index.js';
import { useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

// A batch claim leases jobs with one command and reads them back with the next. When a command
// after the lease fails (here: injected into the driver's collection, as a dropped connection would),
// the claim returns nothing to run them, so the store must give the leases back. Otherwise the jobs
// sit leased until the lease expires, and the reclaim spends a second attempt: with `retries: 0`
// (maxAttempts 1) a job dies without ever running.
const fixture = useMongoFixture();

interface Faults {
  /** Fails the batch read-back (a find by lease tokens). */
  readBack?: boolean;
  /** Fails the give-back (updateMany). */
  giveBack?: boolean;
  /** Runs before the first take of several candidates (an updateMany) is sent (e.g. a concurrent claimer takes a candidate). */
  beforeTake?: () => Promise<void>;
  /** Fails a lone candidate's findOneAndUpdate after the server applied it (the reply is lost). */
  loneTakeAfterApply?: boolean;
}

const injected = () => new MongoNetworkError('connection reset (injected)');

/** The store's jobs collection, with faults injected at the driver's API. */
function faultyJobs(jobs: Collection<JobDocument>, faults: Faults): Collection<JobDocument> {
  let takes = 0;
  return new Proxy(jobs, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const call = (...args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(target, args);
      switch (prop) {
        case 'find':
          return (filter: Document, ...rest: unknown[]) =>
            faults.readBack && filter['lease.token'] ? { toArray: () => Promise.reject(injected()) } : call(filter, ...rest);
        case 'findOneAndUpdate':
          return async (...args: unknown[]) => {
            const result = await call(...args);
            if (faults.loneTakeAfterApply) throw injected();
            return result;
          };
        case 'updateMany':
          return async (filter: Document, ...rest: unknown[]) => {
            // The give-back finds its jobs by their lease tokens; the take, by their claimability.
            if (filter['lease.token']) return faults.giveBack ? Promise.reject(injected()) : call(filter, ...rest);
            if (takes++ === 0) await faults.beforeTake?.();
            return call(filter, ...rest);
          };
        default:
          return value;
      }
    },
  });
}

async function storeWithJobs(count: number): Promise<{ store: MongoStore; jobs: Collection<JobDocument>; ids: string[] }> {
  const database = fixture.mongo.newDatabaseName('claimfail');
  const store = fixture.newStore({ database });
  await store.init();
  const results = await store.enqueue(
    Array.from({ length: count }, (_, i) => newJob({ payload: { i }, maxAttempts: 1 })),
    { now: at(0) },
  );
  const jobs = fixture.mongo.client.db(database).collection<JobDocument>('loom_jobs');
  return { store, jobs, ids: results.map((r) => r.id) };
}

describe('a batch claim that fails after leasing', () => {
  it('gives the jobs back when the read-back fails: the next claim runs them at attempt 1', async () => {
    const { store, jobs, ids } = await storeWithJobs(3);
    try {
      await expect(claimJobs(faultyJobs(jobs, { readBack: true }), claimRequest('w', at(1), 3), new CaptureLogger())).rejects.toThrow('injected');
      for (const id of ids) expect(await store.getJob(id)).toMatchObject({ status: 'queued', attempt: 0 });
      const again = await store.claim(claimRequest('w', at(2), 3));
      expect(again.map((j) => j.id).sort()).toEqual([...ids].sort());
      expect(again.map((j) => j.attempt)).toEqual([1, 1, 1]);
    } finally {
      await store.close();
    }
  });

  it('says which jobs wait for their lease to expire when giving them back fails too', async () => {
    const { store, jobs, ids } = await storeWithJobs(2);
    try {
      const error = await claimJobs(faultyJobs(jobs, { readBack: true, giveBack: true }), claimRequest('w', at(1), 2), new CaptureLogger()).catch(
        (e: unknown) => e,
      );
      expect(LoomError.is(error, 'STORE_ERROR')).toBe(true);
      expect((error as Error).message).toMatch(/injected.*giving it back failed too.*lease expires/);
      for (const id of ids) expect((error as Error).message).toContain(id);
    } finally {
      await store.close();
    }
  });

  it('hands out the jobs of earlier rounds and gives back a later round that failed, logging it', async () => {
    const { store, jobs, ids } = await storeWithJobs(4);
    try {
      const logger = new CaptureLogger();
      let rival = '';
      const faults: Faults = {
        // A concurrent claimer takes the first candidate between the candidate read and the
        // update that takes them, so a second round looks for one more job; that round's take
        // fails after the server applied it.
        beforeTake: async () => {
          [{ id: rival }] = await store.claim(claimRequest('rival', at(1), 1));
          faults.loneTakeAfterApply = true;
        },
      };
      const claimed = await claimJobs(faultyJobs(jobs, faults), claimRequest('w', at(1), 3), logger);
      expect(claimed.map((j) => j.id)).toEqual(ids.slice(1, 3));
      expect(claimed.map((j) => j.attempt)).toEqual([1, 1]);
      expect(rival).toBe(ids[0]);
      expect(await store.getJob(ids[3])).toMatchObject({ status: 'queued', attempt: 0 });
      expect(logger.at('warn')).toEqual([expect.objectContaining({ msg: expect.stringContaining('batch claim round failed') })]);
      expect(logger.at('warn')[0].fields.jobIds).toEqual(ids.slice(1, 3));
      const [last] = await store.claim(claimRequest('w', at(2), 3));
      expect(last).toMatchObject({ id: ids[3], attempt: 1 });
    } finally {
      await store.close();
    }
  });
});

describe('a claim of one job whose findAndModify fails after the server applied it', () => {
  it('gives the job back: the next claim runs it at attempt 1', async () => {
    const { store, jobs, ids } = await storeWithJobs(1);
    try {
      await expect(claimJobs(faultyJobs(jobs, { loneTakeAfterApply: true }), claimRequest('w', at(1), 1), new CaptureLogger())).rejects.toThrow('injected');
      expect(await store.getJob(ids[0])).toMatchObject({ status: 'queued', attempt: 0 });
      const [again] = await store.claim(claimRequest('w', at(2), 1));
      expect(again).toMatchObject({ id: ids[0], attempt: 1 });
    } finally {
      await store.close();
    }
  });

  it('with a global concurrency limit, gives back both the job and its slot', async () => {
    const { store, jobs, ids } = await storeWithJobs(1);
    try {
      const flow = fixture.mongo.client.db(jobs.dbName).collection<FlowDocument>('loom_flow');
      const logger = new CaptureLogger();
      const claims = new MongoFlowClaims(faultyJobs(jobs, { loneTakeAfterApply: true }), new FlowPermits(flow, logger), logger);
      const req = { ...claimRequest('w', at(1), 1), flow: [{ name: 'send', globalConcurrency: 1 }] };
      await expect(claimJobs(jobs, req, logger, claims)).rejects.toThrow('injected');
      expect(await store.getJob(ids[0])).toMatchObject({ status: 'queued', attempt: 0 });
      expect((await flow.findOne({ _id: { n: 'send' } }))?.h).toEqual([]);
      const [again] = await store.claim({ ...claimRequest('w', at(2), 1), flow: [{ name: 'send', globalConcurrency: 1 }] });
      expect(again).toMatchObject({ id: ids[0], attempt: 1 });
    } finally {
      await store.close();
    }
  });
});
