import { afterEach, describe, expect, it } from '@jest/globals';
import type { ClientSession, Collection, Document } from 'mongodb';
import { freshCollectionEachTest, serverError, type Target } from './target.js';

// A plain write that meets a document an open transaction has written waits for that
// transaction, but no longer than its maxTimeMS: then it fails with MaxTimeMSExpired (50) and
// changes nothing, as on mongod.
let t: Target;
let coll: Collection<Document>;
let session: ClientSession | undefined;
freshCollectionEachTest('locked', async (target, fresh) => {
  t = target;
  coll = fresh;
  await coll.insertMany([1, 2, 3].map((_id) => ({ _id, n: 0 })) as never[]);
});
afterEach(async () => {
  await session?.endSession();
  session = undefined;
});

/** Opens a transaction that writes document `_id` (and so holds its lock) and leaves it open. */
async function lockedByTransaction(_id: number, write: 'update' | 'insert' = 'update'): Promise<ClientSession> {
  session = t.client.startSession();
  session.startTransaction();
  if (write === 'insert') await coll.insertOne({ _id, n: 0 } as never, { session });
  else await coll.updateOne({ _id: _id as never }, { $inc: { n: 1 } }, { session });
  return session;
}

async function values(): Promise<[unknown, unknown][]> {
  return (await coll.find().sort({ _id: 1 }).toArray()).map((d) => [d._id, d.n]);
}

describe('a write blocked by a transaction', () => {
  it('fails with MaxTimeMSExpired once maxTimeMS has passed, and succeeds after the transaction ends', async () => {
    const s = await lockedByTransaction(1);
    const err = await serverError(coll.findOneAndUpdate({ _id: 1 as never }, { $inc: { n: 100 } }, { maxTimeMS: 200 }));
    expect(err.code).toBe(50);
    await s.commitTransaction();
    await coll.updateOne({ _id: 1 as never }, { $inc: { n: 10 } }, { maxTimeMS: 200 });
    expect((await coll.findOne({ _id: 1 as never }))?.n).toBe(11);
  });

  // mongod, src/mongo/db/ops/write_ops_exec.cpp, handleError(): an interruption is rethrown,
  // "These have always failed the whole batch": the command answers ok: 0, code 50, not a
  // writeErrors entry, and no statement after the interrupted one runs, even in an unordered
  // batch; the statements before it stay applied.
  for (const ordered of [true, false]) {
    describe(ordered ? 'an ordered batch' : 'an unordered batch', () => {
      it('update: fails the whole command at the blocked statement', async () => {
        await lockedByTransaction(2);
        const err = await serverError(
          t.db.command({ update: coll.collectionName, updates: [1, 2, 3].map((_id) => ({ q: { _id }, u: { $inc: { n: 10 } } })), ordered, maxTimeMS: 150 }),
        );
        expect(err.code).toBe(50);
        expect(err.codeName).toBe('MaxTimeMSExpired');
        expect(await values()).toEqual([
          [1, 10],
          [2, 0],
          [3, 0],
        ]);
      });

      it('insert: fails the whole command at the blocked statement', async () => {
        await lockedByTransaction(5, 'insert');
        const err = await serverError(
          t.db.command({ insert: coll.collectionName, documents: [4, 5, 6].map((_id) => ({ _id, n: 1 })), ordered, maxTimeMS: 150 }),
        );
        expect(err.code).toBe(50);
        expect((await values()).map(([id]) => id)).toEqual([1, 2, 3, 4]);
      });

      it('delete: fails the whole command at the blocked statement', async () => {
        await lockedByTransaction(2);
        const err = await serverError(
          t.db.command({ delete: coll.collectionName, deletes: [1, 2, 3].map((_id) => ({ q: { _id }, limit: 1 })), ordered, maxTimeMS: 150 }),
        );
        expect(err.code).toBe(50);
        expect((await values()).map(([id]) => id)).toEqual([2, 3]);
      });
    });
  }

  it("the driver's unordered bulkWrite fails with code 50 and applies none of the later writes", async () => {
    await lockedByTransaction(2);
    const err = await serverError(
      coll.bulkWrite(
        [1, 2, 3].map((_id) => ({ updateOne: { filter: { _id: _id as never }, update: { $inc: { n: 10 } } } })),
        { ordered: false, maxTimeMS: 150 },
      ),
    );
    expect(err.code).toBe(50);
    expect(await values()).toEqual([
      [1, 10],
      [2, 0],
      [3, 0],
    ]);
  });

  it('findAndModify: fails the command with ok: 0 and changes nothing', async () => {
    await lockedByTransaction(2);
    const err = await serverError(t.db.command({ findAndModify: coll.collectionName, query: { _id: 2 }, update: { $inc: { n: 10 } }, maxTimeMS: 150 }));
    expect(err.code).toBe(50);
    expect(await values()).toEqual([
      [1, 0],
      [2, 0],
      [3, 0],
    ]);
  });
});

// A client that dies inside a transaction leaves it open, holding its locks, until the server aborts
// it (transactionLifetimeLimitSeconds, 60 s by default). Whoever knows its session id can end it at
// once with killSessions (a user may kill the sessions of their own user): `loom selftest` does so
// for the engine it SIGKILLs.
describe('a transaction whose session is killed', () => {
  it('is aborted: the write it blocked goes through at once, and its own write is gone', async () => {
    const s = await lockedByTransaction(1);
    const waiting = coll.updateOne({ _id: 1 as never }, { $inc: { n: 10 } }, { maxTimeMS: 5_000 });
    await t.client.db('admin').command({ killSessions: [s.id] });
    await waiting;
    expect(await values()).toEqual([
      [1, 10],
      [2, 0],
      [3, 0],
    ]);
    const err = await serverError(s.commitTransaction());
    expect(err.code).toBe(251);
  });

  it('stays open when another session is killed', async () => {
    const s = await lockedByTransaction(1);
    const other = t.client.startSession();
    try {
      await t.client.db('admin').command({ killSessions: [other.id] });
    } finally {
      await other.endSession();
    }
    const err = await serverError(coll.updateOne({ _id: 1 as never }, { $inc: { n: 10 } }, { maxTimeMS: 150 }));
    expect(err.code).toBe(50);
    await s.commitTransaction();
    expect(await values()).toEqual([
      [1, 1],
      [2, 0],
      [3, 0],
    ]);
  });
});
