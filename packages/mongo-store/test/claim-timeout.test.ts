import { describe, expect, it } from '@jest/globals';
import { ObjectId } from 'mongodb';
import { LoomError } from '@loom/core';
import { openCollections } from '../src/connection/collections.js';
import { MongoStore } from '../src/index.js';
import { resolveOptions } from '../src/options.js';
import { useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

// A worker that died inside ctx.transaction leaves its transaction open until the server aborts it
// (60 s on mongod). A claim whose write reaches a job that transaction wrote waits for it: without
// a bound, every claim meeting that job hangs for the rest of the minute (this test then times out).
// Claims carry maxTimeMS (option claimTimeout): past it, the claim claims nothing, logged.
const fixture = useMongoFixture();

describe('a claim meeting a job held by a transaction left open', () => {
  it.each([
    ['one job (findAndModify)', 1, 1],
    ['a batch (bulk update)', 10, 3],
  ])(
    'claiming %s gives up on the held job after claimTimeout, logged, and takes the others; once the transaction ends the held job is claimed',
    async (_what, limit, queued) => {
      const database = fixture.mongo.newDatabaseName('claim-timeout');
      const warnings: string[] = [];
      const logger = { debug: () => {}, warn: (_obj: Record<string, unknown>, msg?: string) => void warnings.push(msg ?? ''), error: () => {} };
      const store = fixture.newStore({ database, claimTimeout: '100ms', logger });
      await store.init();
      const [{ id }, ...others] = await store.enqueue(
        Array.from({ length: queued }, (_, i) => newJob({ payload: { i } })),
        { now: at(0) },
      );
      // A worker's transaction wrote the queued job (e.g. a debounced enqueue inside ctx.transaction), then the worker died.
      const { jobs } = openCollections(fixture.mongo.client, resolveOptions({ client: fixture.mongo.client, database }));
      const session = fixture.mongo.client.startSession();
      try {
        session.startTransaction();
        await jobs.updateOne({ _id: ObjectId.createFromHexString(id) }, { $set: { 'payload.n': 2 } }, { session });
        const first = await store.claim(claimRequest('worker-a', at(1), limit));
        expect(first.map((job) => job.id).sort()).toEqual(others.map((r) => r.id).sort());
        expect(warnings).toEqual([
          expect.stringMatching(new RegExp(`a claim ran past its maxTimeMS \\(100 ms, MongoStore option claimTimeout\\).*job ${id} is held so`)),
        ]);
        expect(await store.getJob(id)).toMatchObject({ status: 'queued', attempt: 0 });
        // Still held: left out at once, with no second wait and no second warning.
        expect(await store.claim(claimRequest('worker-a', at(2), limit))).toEqual([]);
        expect(warnings).toHaveLength(1);
      } finally {
        await session.abortTransaction().catch(() => undefined);
        await session.endSession();
      }
      const claimed = await store.claim(claimRequest('worker-a', at(3), limit));
      expect(claimed.map((job) => job.id)).toEqual([id]);
      expect(claimed[0]).toMatchObject({ status: 'running', attempt: 1, payload: { i: 0 } });
      await store.close();
    },
  );

  it.each([
    ['without flow limits', undefined],
    ['with a flow limit (claims through permits)', [{ name: 'send', globalConcurrency: 10 }]],
    ['with a group limit (claims key by key)', [{ name: 'send', group: { concurrency: 2 } }]],
  ])('a held job of one queue does not stop a due job of another queue served by the same claims, %s (issue 28, item 1)', async (_what, flow) => {
    const database = fixture.mongo.newDatabaseName('claim-timeout-queues');
    const warnings: string[] = [];
    const logger = { debug: () => {}, warn: (_obj: Record<string, unknown>, msg?: string) => void warnings.push(msg ?? ''), error: () => {} };
    const store = fixture.newStore({ database, claimTimeout: '100ms', logger });
    await store.init();
    // A is first in claim order (higher priority) and held by a transaction left open; B waits in another queue.
    const [{ id: a }, { id: b }] = await store.enqueue([newJob({ queue: 'a', priority: 5, groupKey: 'g1' }), newJob({ queue: 'b', groupKey: 'g2' })], {
      now: at(0),
    });
    const { jobs } = openCollections(fixture.mongo.client, resolveOptions({ client: fixture.mongo.client, database }));
    const session = fixture.mongo.client.startSession();
    const request = (now: Date) => ({ ...claimRequest('worker-a', now, 1), queues: ['a', 'b'], ...(flow ? { flow } : {}) });
    try {
      session.startTransaction();
      await jobs.updateOne({ _id: ObjectId.createFromHexString(a) }, { $set: { note: 'held' } } as never, { session });
      expect((await store.claim(request(at(1)))).map((job) => job.id)).toEqual([b]);
      expect(await store.claim(request(at(2)))).toEqual([]);
      expect(warnings).toHaveLength(1);
    } finally {
      await session.abortTransaction().catch(() => undefined);
      await session.endSession();
    }
    expect((await store.claim(request(at(3)))).map((job) => job.id)).toEqual([a]);
    await store.close();
  });

  it('refuses a claimTimeout that is not a positive whole number of milliseconds', () => {
    for (const claimTimeout of ['0s', '-1s', 0.5, 'soon']) {
      let error: unknown;
      try {
        new MongoStore({ client: fixture.mongo.client, database: 'never-used', claimTimeout: claimTimeout as never });
      } catch (err) {
        error = err;
      }
      expect(LoomError.is(error, 'INVALID_ARGUMENT')).toBe(true);
      expect((error as Error).message).toMatch(/claimTimeout/);
    }
  });
});
