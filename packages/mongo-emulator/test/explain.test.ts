import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Document } from 'mongodb';
import { openTarget, type Target } from './target.js';

// explain (queryPlanner) says whether a query is answered by an index, in mongod's stage shape, so
// tests can prove a query is index-backed on the emulator and on mongod alike.
let t: Target;

beforeAll(async () => {
  t = await openTarget();
  const coll = t.db.collection('explained');
  await coll.insertMany([
    { a: 1, b: 'x' },
    { a: 2, b: 'y' },
  ]);
  await coll.createIndex({ a: 1 }, { name: 'by_a' });
});
afterAll(async () => {
  await t.close();
});

function stages(plan: unknown, out: string[] = []): string[] {
  if (Array.isArray(plan)) plan.forEach((p) => stages(p, out));
  else if (plan && typeof plan === 'object') {
    for (const [key, value] of Object.entries(plan)) {
      if (key === 'stage' && typeof value === 'string') out.push(value);
      else if (key !== 'command' && key !== 'parsedQuery') stages(value, out);
    }
  }
  return out;
}

const explain = (inner: Document) => t.db.command({ explain: inner, verbosity: 'queryPlanner' });

describe('explain', () => {
  it('shows an index scan for a find on an indexed field and a collection scan otherwise', async () => {
    expect(stages(await explain({ find: 'explained', filter: { a: 1 } }))).toContain('IXSCAN');
    expect(stages(await explain({ find: 'explained', filter: { b: 'x' } }))).toContain('COLLSCAN');
    expect(stages(await explain({ find: 'explained', filter: {}, hint: 'by_a' }))).toContain('IXSCAN');
  });

  it('explains aggregate by its leading $match, and count', async () => {
    expect(
      stages(await explain({ aggregate: 'explained', pipeline: [{ $match: { a: 2 } }, { $group: { _id: null, n: { $sum: 1 } } }], cursor: {} })),
    ).toContain('IXSCAN');
    expect(stages(await explain({ aggregate: 'explained', pipeline: [{ $group: { _id: '$b', n: { $sum: 1 } } }], cursor: {} }))).toContain('COLLSCAN');
    expect(stages(await explain({ count: 'explained', query: { a: { $gt: 0 } } }))).toContain('IXSCAN');
  });

  it("plans Agenda's lock query as mongod does: its index on the name in sort order, the $or tested on the documents", async () => {
    // mongod's trial picks this plan: the $or's lock-expiry branch bounds only lockedAt, fourth in
    // Agenda's index, so an OR of two index scans would walk every job of the name before its merge
    // yields one, while the name's range in sort order stops at the first unlocked due job.
    const jobs = t.db.collection('agenda_lock');
    await jobs.createIndex({ name: 1, nextRunAt: 1, priority: -1, lockedAt: 1, disabled: 1 }, { name: 'findAndLockNextJobIndex' });
    const now = Date.now();
    await jobs.insertMany(
      Array.from({ length: 40 }, (_, i) => ({
        name: i % 2 === 0 ? 'a' : 'b',
        priority: 0,
        nextRunAt: new Date(now - 60_000 + i * 1000),
        ...(i < 10 ? { lockedAt: new Date(now) } : {}),
      })),
    );
    const query = {
      name: 'a',
      disabled: { $ne: true },
      $or: [{ lockedAt: { $eq: null }, nextRunAt: { $lte: new Date(now) } }, { lockedAt: { $lte: new Date(now - 600_000) } }],
    };
    const sort = { nextRunAt: 1, priority: -1 } as const;
    const lock = { findAndModify: 'agenda_lock', query, sort, update: { $set: { lockedAt: new Date(now) } } };
    const plan = stages(await explain(lock));
    expect(plan).toContain('IXSCAN');
    expect(plan).not.toContain('OR');
    expect(plan).not.toContain('SORT_MERGE');
    const stats = (await t.db.command({ explain: lock, verbosity: 'executionStats' })) as {
      executionStats: { nReturned: number; totalKeysExamined: number; totalDocsExamined: number };
    };
    expect(stats.executionStats.nReturned).toBe(1);
    expect(stats.executionStats.totalKeysExamined).toBeGreaterThanOrEqual(stats.executionStats.totalDocsExamined);
    const locked = await jobs.findOneAndUpdate(query, { $set: { lockedAt: new Date(now) } }, { sort, returnDocument: 'after' });
    expect(locked?.nextRunAt).toEqual(new Date(now - 60_000 + 10 * 1000)); // the first unlocked job of name a
  });

  it('answers a query naming its _id from the _id index, however many fields another index bounds', async () => {
    // A fenced write of a job queue (the job, its status, its lease token) with a partial index on
    // the status and the token: mongod reads the one document by _id, and so must the emulator.
    const jobs = t.db.collection('fenced');
    await jobs.createIndex({ status: 1, 'lease.token': 1 }, { name: 'running_by_token', partialFilterExpression: { status: 'running' } });
    const docs = Array.from({ length: 20 }, (_, i) => ({ status: i % 2 === 0 ? 'running' : 'queued', lease: { token: `t${i}` } }));
    const { insertedIds } = await jobs.insertMany(docs);
    const fence = { _id: insertedIds[4], status: 'running', 'lease.token': 't4', cancelRequestedAt: { $exists: false } };
    const stats = (await t.db.command({ explain: { find: 'fenced', filter: fence }, verbosity: 'executionStats' })) as {
      queryPlanner: Document;
      executionStats: { totalKeysExamined: number; totalDocsExamined: number };
    };
    expect(JSON.stringify(stats.queryPlanner.winningPlan)).toContain('"indexName":"_id_"');
    expect(stats.executionStats.totalDocsExamined).toBe(1);
    expect(stats.executionStats.totalKeysExamined).toBeLessThanOrEqual(2); // the key, and (the emulator) the one past it
    // The other conditions still decide: the wrong token matches nothing.
    expect((await jobs.updateOne({ ...fence, 'lease.token': 't5' }, { $set: { status: 'completed' } })).matchedCount).toBe(0);
    expect((await jobs.updateOne(fence, { $set: { status: 'completed' } })).matchedCount).toBe(1);
    expect(
      (await jobs.updateMany({ _id: { $in: [insertedIds[0], insertedIds[1], insertedIds[2]] }, status: 'running' }, { $set: { n: 1 } })).matchedCount,
    ).toBe(2);
  });

  it('reads nothing: the explained documents are untouched and no cursor is left open', async () => {
    const reply = await explain({ find: 'explained', filter: { a: 1 } });
    expect(reply).not.toHaveProperty('cursor');
    expect(await t.db.collection('explained').countDocuments()).toBe(2);
  });
});
