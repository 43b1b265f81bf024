import { describe, expect, it } from '@jest/globals';
import { CaptureLogger } from '@loom/testing';
import { MongoNetworkError, type Collection, type Document } from 'mongodb';
import { claimJobs } from '../src/claims/claims.js';
import type { JobDocument } from '../src/schema/documents.js';
import { useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

// A claim of several jobs takes them with one updateMany, an update pipeline that gives each job its
// own lease token; a claim of one job takes it with findAndModify and a classic update. Both must
// leave the same job behind, and the pipeline must be as safe to send twice as the bulk of
// updateOnes it replaced (a retryable write the driver resent by itself).
const fixture = useMongoFixture();

async function jobsCollection(count: number, debounced = false): Promise<{ jobs: Collection<JobDocument>; ids: string[]; close: () => Promise<void> }> {
  const database = fixture.mongo.newDatabaseName('batchclaim');
  const store = fixture.newStore({ database });
  await store.init();
  const results = await store.enqueue(
    Array.from({ length: count }, (_, i) => newJob({ payload: { i }, ...(debounced ? { debounceKey: `k${i}` } : {}) })),
    { now: at(0) },
  );
  const jobs = fixture.mongo.client.db(database).collection<JobDocument>('loom_jobs');
  return { jobs, ids: results.map((r) => r.id), close: () => store.close() };
}

/** A job document's fields a claim writes, with its token's uniqueness checked apart. */
function leased(doc: JobDocument): Document {
  const { _id, payload: _payload, lease, ...rest } = doc;
  return { ...rest, lease: { owner: lease?.owner, until: lease?.until } };
}

describe('a claim of several jobs', () => {
  it('leaves each job as a claim of that job alone would: same fields, its own token, owner taken literally', async () => {
    const alone = await jobsCollection(1, true);
    const many = await jobsCollection(3, true);
    try {
      const owner = '$worker.a'; // a field path, were it not a literal
      const [one] = await claimJobs(alone.jobs, claimRequest(owner, at(5), 1), new CaptureLogger());
      const three = await claimJobs(many.jobs, claimRequest(owner, at(5), 3), new CaptureLogger());
      expect(one).toMatchObject({ status: 'running', attempt: 1, lease: { owner } });
      expect(three).toHaveLength(3);
      const single = leased((await alone.jobs.findOne({}))!);
      const docs = await many.jobs.find({}).toArray();
      for (const doc of docs) expect(leased(doc)).toEqual(single);
      expect(single).not.toHaveProperty('debounceKey'); // a started job takes no more debounced enqueues
      expect(single).toMatchObject({ status: 'running', attempt: 1, startedAt: at(5), updatedAt: at(5), claimAt: new Date(at(5).getTime() + 30_001) });
      const tokens = docs.map((d) => d.lease!.token);
      expect(new Set(tokens).size).toBe(3);
      expect(three.map((j) => j.lease!.token).sort()).toEqual([...tokens].sort());
    } finally {
      await alone.close();
      await many.close();
    }
  });

  it('is sent once more when its reply is lost: each job is leased once, at attempt 1', async () => {
    const { jobs, ids, close } = await jobsCollection(3);
    try {
      let sends = 0;
      const lossy = new Proxy(jobs, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver) as unknown;
          if (prop !== 'updateMany' || typeof value !== 'function') return value;
          return async (...args: unknown[]) => {
            const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
            if (sends++ === 0) throw new MongoNetworkError('connection reset after the server applied it (injected)');
            return result;
          };
        },
      });
      const claimed = await claimJobs(lossy, claimRequest('w', at(1), 3), new CaptureLogger());
      expect(sends).toBe(2);
      expect(claimed.map((j) => j.id).sort()).toEqual([...ids].sort());
      expect(claimed.map((j) => j.attempt)).toEqual([1, 1, 1]);
      expect(await jobs.countDocuments({ status: 'running', attempt: 1 })).toBe(3);
    } finally {
      await close();
    }
  });
});
