import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Collection, Document } from 'mongodb';
import { openTarget, serverError, type Target } from './target.js';

// The 16 MiB document limit, as mongod enforces it: the write fails with mongod's code and
// nothing changes (the emulator once stored such a document and crashed serving it later).
describe('document size limit', () => {
  let t: Target;
  let coll: Collection<Document>;
  const MiB = 1024 * 1024;
  beforeAll(async () => {
    t = await openTarget();
    coll = t.db.collection('limits');
    await coll.insertOne({ _id: 'grows' as never, s: 'x'.repeat(10 * MiB) });
  });
  afterAll(async () => {
    await t.close();
  });

  it('refuses an insert over 16 MiB with BadValue and stores nothing', async () => {
    const err = await serverError(coll.insertOne({ _id: 'big' as never, s: 'x'.repeat(16 * MiB) }));
    expect(err.code).toBe(2);
    expect(err.message).toContain('too large');
    expect(await coll.countDocuments({ _id: 'big' as never })).toBe(0);
  });

  it('refuses an update that grows a document past 16 MiB with 17419 and keeps the document', async () => {
    const err = await serverError(coll.updateOne({ _id: 'grows' as never }, { $set: { t: 'y'.repeat(7 * MiB) } }));
    expect(err.code).toBe(17419);
    const doc = await coll.findOne({ _id: 'grows' as never });
    expect(doc?.t).toBeUndefined();
    expect((doc?.s as string).length).toBe(10 * MiB);
  });

  it('refuses the same growth through findOneAndUpdate and an upsert (pipelines doubling a field)', async () => {
    expect((await serverError(coll.findOneAndUpdate({ _id: 'grows' as never }, [{ $set: { t: '$s' } }]))).code).toBe(17419);
    const upsert = coll.updateOne({ _id: 'new' as never }, [{ $set: { a: 'x'.repeat(9 * MiB) } }, { $set: { b: '$a' } }], { upsert: true });
    expect((await serverError(upsert)).code).toBe(17419);
    expect(await coll.countDocuments()).toBe(1);
  });

  it("refuses '$'-prefixed field names inside _id", async () => {
    const err = await serverError(coll.insertOne({ _id: { $bad: 1 } as never }));
    expect(err.code).toBe(52);
  });
});
