import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Collection, Document } from 'mongodb';
import { openTarget, serverError, type Target } from './target.js';

// A plain write that meets a document an open transaction has written waits for that
// transaction, but no longer than its maxTimeMS: then it fails with MaxTimeMSExpired (50) and
// changes nothing, as on mongod.
describe('a write blocked by a transaction', () => {
  let t: Target;
  let coll: Collection<Document>;
  beforeAll(async () => {
    t = await openTarget();
    coll = t.db.collection('locked');
    await coll.insertOne({ _id: 1 as never, n: 0 });
  });
  afterAll(async () => {
    await t.close();
  });

  it('fails with MaxTimeMSExpired once maxTimeMS has passed, and succeeds after the transaction ends', async () => {
    const session = t.client.startSession();
    session.startTransaction();
    await coll.updateOne({ _id: 1 as never }, { $inc: { n: 1 } }, { session });
    const err = await serverError(coll.findOneAndUpdate({ _id: 1 as never }, { $inc: { n: 100 } }, { maxTimeMS: 200 }));
    expect(err.code).toBe(50);
    await session.commitTransaction();
    await session.endSession();
    await coll.updateOne({ _id: 1 as never }, { $inc: { n: 10 } }, { maxTimeMS: 200 });
    expect((await coll.findOne({ _id: 1 as never }))?.n).toBe(11);
  });
});
