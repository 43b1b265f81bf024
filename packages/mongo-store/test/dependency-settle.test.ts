import { describe, expect, it } from '@jest/globals';
import type { AnyBulkWriteOperation, Collection } from 'mongodb';
import type { JobDocument } from '../src/schema/documents.js';
import type { StoreCollections } from '../src/connection/collections.js';
import { useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

// A settle reads the finished jobs, applies their ends to their dependents, then closes them only
// if no dependent was added since its read. A job enqueued in that window with a dependency that
// was cancelled (or is dead) waits for the settle to apply its policy: it must not be left waiting
// for good. The close does not match, and the next round reads the dependency again.
const fixture = useMongoFixture();

/** Whether a bulk write is the settle's close (it removes `dependentsOpen`). */
function isClose(statements: AnyBulkWriteOperation<JobDocument>[]): boolean {
  const first = statements[0];
  return first !== undefined && 'updateMany' in first && JSON.stringify(first.updateMany.update).includes('dependentsOpen');
}

describe('settleDependents', () => {
  it('a dependent enqueued between the read and the close is settled by the next round', async () => {
    const database = fixture.mongo.newDatabaseName('settle');
    const store = fixture.newStore({ database });
    const peer = fixture.newStore({ database });
    await store.init();
    await peer.init();
    try {
      const [dep] = await store.enqueue([newJob({ name: 'dep' })], { now: at(0) });
      const [first] = await store.enqueue([newJob({ payload: 'first', dependsOn: [dep!.id], onDependencyFailure: 'run' })], { now: at(0) });
      expect(await store.cancelJob(dep!.id, { now: at(1) })).toMatchObject({ outcome: 'cancelled' });

      // The store's jobs collection, with the peer's enqueue of a second dependent committed just
      // before the first close is sent (as another process's enqueue may land there).
      const collections = (store as unknown as { collections: StoreCollections }).collections;
      const jobs = collections.jobs;
      let late: string | undefined;
      collections.jobs = new Proxy(jobs, {
        get(target, prop) {
          const value = Reflect.get(target, prop, target) as unknown;
          if (prop !== 'bulkWrite') return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
          return async (statements: AnyBulkWriteOperation<JobDocument>[], ...rest: unknown[]) => {
            if (late === undefined && isClose(statements)) {
              [{ id: late }] = await peer.enqueue([newJob({ payload: 'late', dependsOn: [dep!.id], onDependencyFailure: 'run' })], { now: at(3) });
            }
            return (jobs.bulkWrite as (...a: unknown[]) => Promise<unknown>)(statements, ...rest);
          };
        },
      }) as Collection<JobDocument>;
      try {
        expect(await store.settleDependents({ now: at(4), jobIds: [dep!.id] })).toBe(1);
      } finally {
        collections.jobs = jobs;
      }
      expect(late).toBeDefined();
      const ready = await store.claim(claimRequest('w', at(5), 10));
      expect(ready.map((job) => job.payload).sort()).toEqual(['first', 'late']);
      expect(ready.map((job) => job.id).sort()).toEqual([first!.id, late!].sort());
      // Closed: nothing is left for a sweep to settle.
      expect(await store.settleDependents({ now: at(6) })).toBe(0);
    } finally {
      await peer.close();
      await store.close();
    }
  });
});
