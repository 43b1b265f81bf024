import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MongoWriteConcernError, type Collection, type Document } from 'mongodb';
import { openTarget, type Target } from './target.js';

// Write concern as a replica set answers it: what its members can satisfy succeeds; more
// members than the set has, or an unknown tag set, is a writeConcernError after the write.
describe('write concern', () => {
  let t: Target;
  let coll: Collection<Document>;
  beforeAll(async () => {
    t = await openTarget();
    coll = t.db.collection('wc');
  });
  afterAll(async () => {
    await t.close();
  });

  it('accepts w: 1 and w: "majority"', async () => {
    await coll.insertOne({ _id: 1 as never }, { writeConcern: { w: 1 } });
    await coll.insertOne({ _id: 2 as never }, { writeConcern: { w: 'majority', wtimeoutMS: 1000 } });
    expect(await coll.countDocuments()).toBe(2);
  });

  it('reports w: 50 as UnsatisfiableWriteConcern (100) after applying the write', async () => {
    const err = await coll.insertOne({ _id: 3 as never }, { writeConcern: { w: 50 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MongoWriteConcernError);
    expect((err as MongoWriteConcernError).code).toBe(100);
    expect(await coll.countDocuments({ _id: 3 as never })).toBe(1);
  });

  it('reports an unknown tag set as UnknownReplWriteConcern (79)', async () => {
    const err = await coll.insertOne({ _id: 4 as never }, { writeConcern: { w: 'nosuchtag' as never } }).catch((e: unknown) => e);
    expect((err as MongoWriteConcernError).code).toBe(79);
  });

  it('puts operationTime and $clusterTime on replies, advancing with writes', async () => {
    const before = await t.db.command({ ping: 1 });
    await coll.insertOne({ _id: 5 as never });
    const after = await t.db.command({ ping: 1 });
    expect(before.operationTime).toBeDefined();
    expect((after.$clusterTime as { clusterTime: { greaterThan(x: unknown): boolean } }).clusterTime.greaterThan(before.operationTime)).toBe(true);
  });
});
