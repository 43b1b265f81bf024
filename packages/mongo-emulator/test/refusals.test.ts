import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Collection, type Document } from 'mongodb';
import { openTarget, serverError as refusal, type Target } from './target.js';

// What the emulator does not implement must fail loudly, naming the feature, rather than
// answer wrongly. These are emulator-only by nature: a real server supports all of them.
describe('loud refusals (the emulator itself, in every environment)', () => {
  let t: Target;
  let coll: Collection<Document>;
  beforeAll(async () => {
    t = await openTarget({ emulator: true });
    coll = t.db.collection('refusals');
    await coll.insertOne({ a: 1, loc: [0, 0] });
  });
  afterAll(async () => {
    await t.close();
  });

  it.each([
    ['a non-simple collation', () => coll.find({}, { collation: { locale: 'fr' } }).toArray(), 'collation'],
    ['a 2dsphere index', () => coll.createIndex({ loc: '2dsphere' }), "'2dsphere'"],
    ['a text query', () => coll.find({ $text: { $search: 'x' } }).toArray(), '$text'],
    ['a $geoNear stage', () => coll.aggregate([{ $geoNear: { near: [0, 0], distanceField: 'd' } }]).toArray(), '$geoNear'],
    ['a validator', () => t.db.command({ collMod: 'refusals', validator: { a: { $type: 'number' } } }), 'validator'],
    ['a view', () => t.db.createCollection('view', { viewOn: 'refusals', pipeline: [] }), 'viewOn'],
    ["$type 'double'", () => coll.find({ a: { $type: 'double' } }).toArray(), "'double'"],
    ['a capped collection', () => t.db.createCollection('capped', { capped: true, size: 4096 }), 'capped'],
    ['tailable cursors', () => coll.find({}, { tailable: true }).toArray(), 'tailable'],
    ['$out inside $lookup', () => coll.aggregate([{ $lookup: { from: 'x', pipeline: [{ $out: 'y' }], as: 'z' } }]).toArray(), '$out'],
  ])('refuses %s with NotImplemented naming it', async (_what, run, named) => {
    const err = await refusal((run as () => Promise<unknown>)());
    expect([err.code, err.codeName]).toEqual([238, 'NotImplemented']);
    expect(err.message).toContain(named as string);
  });
});
