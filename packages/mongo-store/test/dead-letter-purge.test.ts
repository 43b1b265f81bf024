import { describe, expect, it } from '@jest/globals';
import type { Collection } from 'mongodb';
import { openCollections } from '../src/connection/collections.js';
import { purgeNewestDeadLetters } from '../src/dead-letters/dead-letters.js';
import type { DeadLetterDocument } from '../src/schema/documents.js';
import { deadLetterFilter } from '../src/schema/filters.js';
import { deadLetterIndexFor } from '../src/operations/job-control.js';
import { resolveOptions } from '../src/options.js';
import { useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

// `purgeDeadLetters` with a `limit` reads the newest letters, then deletes them. In between, a
// letter it read can be replayed and its job die again: the next death's letter has the same id.
// Deleting "the letters with these ids" would delete that new letter, which the purge never chose,
// and the job would be gone (no job, no dead letter). Only the letters read may go.
const fixture = useMongoFixture();

describe('purging the newest dead letters', () => {
  it("keeps the letter of a job that was replayed and died again between the purge's read and its delete", async () => {
    const database = fixture.mongo.newDatabaseName('purge');
    const store = fixture.newStore({ database });
    await store.init();
    const [{ id }] = await store.enqueue([newJob()], { now: at(0) });
    const [first] = await store.claim(claimRequest('worker-a', at(1)));
    await store.deadLetter({ jobId: id, token: first!.lease!.token }, { reason: 'first death', now: at(2) });

    const { deadLetters } = openCollections(fixture.mongo.client, resolveOptions({ client: fixture.mongo.client, database }));
    // The purge's collection, with a pause just before its delete: there an operator replays the
    // letter, and the job runs again (another worker) and dies a second time.
    const interleaved = new Proxy(deadLetters, {
      get(target, prop, receiver) {
        if (prop !== 'deleteMany') return Reflect.get(target, prop, receiver) as unknown;
        return async (...args: Parameters<Collection<DeadLetterDocument>['deleteMany']>) => {
          expect(await store.replayDeadLetter(id, at(10))).toBe(id);
          const [again] = await store.claim(claimRequest('worker-b', at(11)));
          expect(again?.id).toBe(id);
          await store.deadLetter({ jobId: id, token: again!.lease!.token }, { reason: 'second death', now: at(12) });
          return target.deleteMany(...args);
        };
      },
    });

    expect(await purgeNewestDeadLetters(interleaved, deadLetterFilter({}), 1, deadLetterIndexFor({}))).toBe(0);
    expect(await store.getJob(id)).toMatchObject({ status: 'dead', deadReason: 'second death' });
    expect(await store.listDeadLetters({})).toEqual([expect.objectContaining({ id, reason: 'second death' })]);
    // Without a race, the purge deletes what it read.
    expect(await store.purgeDeadLetters({ limit: 1 })).toBe(1);
    expect(await store.listDeadLetters({})).toEqual([]);
    await store.close();
  });
});
