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

  // Below the limit is proved from string lengths (3 UTF-8 bytes per character at most); the exact
  // size decides only beyond that: these sizes are where a looser or a tighter shortcut goes wrong.
  it('accepts an update to just under 16 MiB whose string lengths alone do not prove it', async () => {
    await coll.insertOne({ _id: 'near' as never, s: 'x'.repeat(10 * MiB) });
    await coll.updateOne({ _id: 'near' as never }, { $set: { t: 'y'.repeat(6 * MiB - 1024) } });
    expect(((await coll.findOne({ _id: 'near' as never }))?.t as string).length).toBe(6 * MiB - 1024);
    await coll.deleteOne({ _id: 'near' as never });
  });

  it('counts multi-byte characters in UTF-8: fewer than 16 Mi characters can be over 16 MiB', async () => {
    await coll.insertOne({ _id: 'wide' as never, s: 'é'.repeat(5 * MiB) }); // 10 MiB of UTF-8
    const err = await serverError(coll.updateOne({ _id: 'wide' as never }, { $set: { t: 'é'.repeat(3 * MiB + 1024) } }));
    expect(err.code).toBe(17419);
    const big = await serverError(coll.insertOne({ _id: 'wider' as never, s: '€'.repeat(Math.ceil((16 * MiB) / 3) + 1000) })); // 3 bytes each
    expect(big.code).toBe(2);
    expect(await coll.countDocuments({ _id: { $in: ['wider'] } as never })).toBe(0);
    expect((await coll.findOne({ _id: 'wide' as never }))?.t).toBeUndefined();
    await coll.deleteOne({ _id: 'wide' as never });
  });

  it("refuses '$'-prefixed field names inside _id", async () => {
    const err = await serverError(coll.insertOne({ _id: { $bad: 1 } as never }));
    expect(err.code).toBe(52);
  });
});
