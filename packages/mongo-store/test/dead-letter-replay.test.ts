import { describe, expect, it } from '@jest/globals';
import { ObjectId, type Collection } from 'mongodb';
import { openCollections, type StoreCollections } from '../src/connection/collections.js';
import { resolveOptions } from '../src/options.js';
import { replayDeadLetter } from '../src/dead-letters/dead-letters.js';
import type { JobDocument } from '../src/schema/documents.js';
import { quietLogger, useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

// Issue 12, defect 8. On a standalone a replay is steps: insert the job again, then delete the dead
// letter. In between, the replayed job can run, fail and die again: that next death's letter
// replaces the one the replay read, and deleting "the dead letter of this id" would delete it,
// losing the job (getJob null, no dead letter). The replay must delete only the letter it read.
const fixture = useMongoFixture({ topology: 'standalone' });

describe('replaying a dead letter on a standalone', () => {
  it("keeps the letter of the job's next death when that death comes between the replay's steps", async () => {
    const database = fixture.mongo.newDatabaseName('replay');
    const store = fixture.newStore({ database });
    await store.init();
    const [{ id }] = await store.enqueue([newJob()], { now: at(0) });
    const [first] = await store.claim(claimRequest('worker-a', at(1)));
    await store.deadLetter({ jobId: id, token: first.lease!.token }, { reason: 'first death', now: at(2) });

    const base = openCollections(fixture.mongo.client, resolveOptions({ client: fixture.mongo.client, database }));
    const jobs = base.jobs;
    // The replay's own collections, with a pause right after it put the job back: there the job
    // runs again (another worker) and dies a second time.
    const interleaved = new Proxy(jobs, {
      get(target, prop, receiver) {
        if (prop !== 'insertOne') return Reflect.get(target, prop, receiver) as unknown;
        return async (...args: Parameters<Collection<JobDocument>['insertOne']>) => {
          const inserted = await target.insertOne(...args);
          const [again] = await store.claim(claimRequest('worker-b', at(11)));
          expect(again?.id).toBe(id);
          await store.deadLetter({ jobId: id, token: again.lease!.token }, { reason: 'second death', now: at(12) });
          return inserted;
        };
      },
    });
    const collections: StoreCollections = { ...base, jobs: interleaved };

    const replayed = await replayDeadLetter({ collections, transactional: false, logger: quietLogger }, ObjectId.createFromHexString(id), at(10));
    expect(replayed).toBe(id);
    expect(await store.getJob(id)).toMatchObject({ status: 'dead', deadReason: 'second death' });
    expect(await store.listDeadLetters({})).toEqual([expect.objectContaining({ id, reason: 'second death' })]);
  });
});
