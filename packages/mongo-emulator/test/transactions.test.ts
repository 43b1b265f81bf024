import { afterAll, describe, expect, it } from '@jest/globals';
import { Long, MongoServerError, type ClientSession, type Collection, type Document } from 'mongodb';
import { freshCollectionEachTest, openTarget, type Target, serverError as failure } from './target.js';

let t: Target;
let coll: Collection<Document>;
const sessions: ClientSession[] = [];
freshCollectionEachTest('txn', async (target, fresh) => {
  t = target;
  coll = fresh;
  await coll.insertMany([
    { _id: 1, n: 0, v: 'start' },
    { _id: 2, n: 0, v: 'start' },
  ] as never[]);
});

/** The collection typed for the _ids these tests use (numbers and strings, not ObjectIds). */
interface AnyIdDoc {
  _id: string | number | Long;
  n?: number;
  v?: string;
  k?: string;
}
const anyIds = (): Collection<AnyIdDoc> => coll as unknown as Collection<AnyIdDoc>;

function session(): ClientSession {
  const s = t.client.startSession();
  sessions.push(s);
  return s;
}

afterAll(async () => {
  for (const s of sessions) await s.endSession();
});

describe('transactions', () => {
  it('commits all writes together; reads inside see them, reads outside do not until commit', async () => {
    const s = session();
    await s.withTransaction(async () => {
      await coll.insertOne({ _id: 3, n: 5 } as never, { session: s });
      await coll.updateOne({ _id: 1 as never }, { $inc: { n: 10 } }, { session: s });
      await coll.deleteOne({ _id: 2 as never }, { session: s });
      expect(await coll.countDocuments({}, { session: s })).toBe(2);
      expect((await coll.find({}, { session: s }).sort({ n: -1 }).toArray()).map((d) => d._id)).toEqual([1, 3]);
      expect(await coll.findOne({ _id: 1 as never }, { session: s })).toMatchObject({ n: 10 });
      // Outside the transaction nothing has happened yet.
      expect((await coll.find<{ _id: unknown; n: number }>({}).sort({ _id: 1 }).toArray()).map((d) => [d._id, d.n])).toEqual([
        [1, 0],
        [2, 0],
      ]);
    });
    expect((await coll.find<{ _id: unknown; n: number }>({}).sort({ _id: 1 }).toArray()).map((d) => [d._id, d.n])).toEqual([
      [1, 10],
      [3, 5],
    ]);
  });

  it('reads from the snapshot taken at its first operation, not later commits', async () => {
    const s = session();
    s.startTransaction();
    expect(await coll.countDocuments({}, { session: s })).toBe(2);
    await coll.updateOne({ _id: 1 as never }, { $set: { v: 'outside' } });
    await coll.insertOne({ _id: 3, v: 'outside' } as never);
    await coll.deleteOne({ _id: 2 as never });
    const seen = await coll.find<{ _id: unknown; v: string }>({}, { session: s }).sort({ _id: 1 }).toArray();
    expect(seen.map((d) => [d._id, d.v])).toEqual([
      [1, 'start'],
      [2, 'start'],
    ]);
    expect(await coll.findOne({ _id: 3 as never }, { session: s })).toBeNull();
    // Writing what changed since the snapshot is a conflict.
    expect((await failure(coll.updateOne({ _id: 2 as never }, { $set: { v: 'txn' } }, { session: s }))).code).toBe(112);
    await s.abortTransaction();
    expect((await coll.find<{ _id: unknown; v: string }>({}).sort({ _id: 1 }).toArray()).map((d) => [d._id, d.v])).toEqual([
      [1, 'outside'],
      [3, 'outside'],
    ]);
  });

  it('discards everything on abort', async () => {
    const s = session();
    s.startTransaction();
    await coll.insertOne({ _id: 9 } as never, { session: s });
    await coll.updateMany({}, { $set: { v: 'changed' } }, { session: s });
    expect(await coll.countDocuments({ v: 'changed' }, { session: s })).toBe(3);
    await s.abortTransaction();
    expect(await coll.countDocuments()).toBe(2);
    expect(await coll.countDocuments({ v: 'changed' })).toBe(0);
  });

  it('gives a second writer WriteConflict (112) labelled TransientTransactionError, then NoSuchTransaction (251)', async () => {
    const a = session();
    const b = session();
    a.startTransaction();
    b.startTransaction();
    await coll.updateOne({ _id: 1 as never }, { $inc: { n: 1 } }, { session: a });
    await coll.findOne({ _id: 2 as never }, { session: b });
    const conflict = await failure(coll.updateOne({ _id: 1 as never }, { $inc: { n: 1 } }, { session: b }));
    expect([conflict.code, conflict.codeName]).toEqual([112, 'WriteConflict']);
    expect(conflict.hasErrorLabel('TransientTransactionError')).toBe(true);
    const gone = await failure(coll.findOne({ _id: 2 as never }, { session: b }));
    expect([gone.code, gone.codeName]).toEqual([251, 'NoSuchTransaction']);
    expect(gone.hasErrorLabel('TransientTransactionError')).toBe(true);
    await b.abortTransaction();
    await a.commitTransaction();
    expect((await coll.findOne({ _id: 1 as never }))?.n).toBe(1);
  });

  it('conflicts with a write committed after the transaction started', async () => {
    const a = session();
    a.startTransaction();
    await coll.findOne({ _id: 2 as never }, { session: a });
    await coll.updateOne({ _id: 1 as never }, { $set: { v: 'outside' } });
    const conflict = await failure(coll.updateOne({ _id: 1 as never }, { $set: { v: 'inside' } }, { session: a }));
    expect(conflict.code).toBe(112);
    await a.abortTransaction();
    expect((await coll.findOne({ _id: 1 as never }))?.v).toBe('outside');
  });

  it('lets withTransaction retry after a transient conflict', async () => {
    const holder = session();
    holder.startTransaction();
    await coll.updateOne({ _id: 1 as never }, { $inc: { n: 1 } }, { session: holder });
    const s = session();
    let attempts = 0;
    await s.withTransaction(async () => {
      attempts++;
      try {
        await coll.updateOne({ _id: 1 as never }, { $inc: { n: 100 } }, { session: s });
      } finally {
        if (attempts === 1) await holder.commitTransaction();
      }
    });
    expect(attempts).toBe(2);
    expect((await coll.findOne({ _id: 1 as never }))?.n).toBe(101);
  });

  it('makes a plain write to a document a transaction holds wait for the commit', async () => {
    const s = session();
    s.startTransaction();
    await coll.updateOne({ _id: 1 as never }, { $set: { v: 'txn' }, $inc: { n: 1 } }, { session: s });
    const plain = coll.updateOne({ _id: 1 as never }, { $set: { v: 'plain' }, $inc: { n: 1 } });
    await s.commitTransaction();
    await plain;
    expect(await coll.findOne({ _id: 1 as never })).toMatchObject({ v: 'plain', n: 2 });
  });

  it('reports a duplicate key inside a transaction without the transient label and aborts it', async () => {
    const s = session();
    s.startTransaction();
    await coll.insertOne({ _id: 5 } as never, { session: s });
    const dup = await failure(coll.insertOne({ _id: 1 } as never, { session: s }));
    expect(dup.code).toBe(11000);
    expect(dup.hasErrorLabel('TransientTransactionError')).toBe(false);
    await s.abortTransaction().catch(() => undefined);
    expect(await coll.countDocuments()).toBe(2);
  });

  it('finds its own writes by _id (equal, $eq, $in, another numeric type) and by other fields', async () => {
    const s = session();
    await s.withTransaction(async () => {
      await anyIds().insertMany(
        [
          { _id: 7, n: 1 },
          { _id: 'x', n: 1 },
          { _id: 9, n: 1 },
        ] as never[],
        { session: s },
      );
      await anyIds().updateOne({ _id: 1 }, { $set: { v: 'own' } }, { session: s });
      expect((await anyIds().updateOne({ _id: 7 }, { $inc: { n: 1 } }, { session: s })).modifiedCount).toBe(1);
      expect((await anyIds().updateOne({ _id: { $eq: 'x' } }, { $inc: { n: 1 } }, { session: s })).modifiedCount).toBe(1);
      expect((await anyIds().updateMany({ _id: { $in: [1, 9, 'nope'] } }, { $inc: { n: 10 } }, { session: s })).modifiedCount).toBe(2);
      expect((await anyIds().updateOne({ _id: Long.fromNumber(9) }, { $inc: { n: 100 } }, { session: s })).modifiedCount).toBe(1);
      expect(
        await coll
          .find({ n: { $gte: 2 } }, { session: s })
          .sort({ _id: 1 })
          .toArray(),
      ).toEqual([
        { _id: 1, n: 10, v: 'own' },
        { _id: 7, n: 2 },
        { _id: 9, n: 111 },
        { _id: 'x', n: 2 },
      ]);
    });
  });

  it("checks a unique index against the transaction's own writes as they move, freeing a key its own update or delete gave up", async () => {
    await anyIds().createIndex({ k: 1 }, { unique: true, partialFilterExpression: { k: { $exists: true } } });
    const s = session();
    s.startTransaction();
    await anyIds().insertOne({ _id: 10, k: 'a' } as never, { session: s });
    expect((await failure(anyIds().insertOne({ _id: 11, k: 'a' } as never, { session: s }))).code).toBe(11000);
    await s.abortTransaction().catch(() => undefined);

    const moved = session();
    await moved
      .withTransaction(async () => {
        await anyIds().insertOne({ _id: 10, k: 'a' } as never, { session: moved });
        await anyIds().updateOne({ _id: 10 }, { $set: { k: 'b' } }, { session: moved });
        await anyIds().insertOne({ _id: 11, k: 'a' } as never, { session: moved }); // 'a' was given up
        await anyIds().deleteOne({ _id: 11 }, { session: moved });
        await anyIds().insertOne({ _id: 12, k: 'a' } as never, { session: moved }); // and again, after the delete
        const dup = await failure(anyIds().updateOne({ _id: 1 }, { $set: { k: 'b' } }, { session: moved }));
        expect(dup.code).toBe(11000); // 'b' is _id 10's, written earlier in this transaction
        throw Object.assign(dup, { abort: true });
      })
      .catch((err: { abort?: boolean }) => {
        if (!err.abort) throw err;
      });
    expect(await anyIds().countDocuments({ k: { $exists: true } })).toBe(0);
  });

  it('answers commitTransaction for an unknown transaction with NoSuchTransaction', async () => {
    const s = session();
    await coll.findOne({}, { session: s }); // binds the session's lsid on the server
    const err = await failure(t.client.db('admin').command({ commitTransaction: 1, txnNumber: Long.fromNumber(4242), autocommit: false }, { session: s }));
    expect(err.code).toBe(251);
  });
});

describe('standalone mode (the emulator itself, in every environment)', () => {
  it('refuses transactions like a real standalone (20 IllegalOperation)', async () => {
    const standalone = await openTarget({ replicaSet: false, emulator: true });
    try {
      const c = standalone.db.collection('c');
      await c.insertOne({ ok: true });
      const s = standalone.client.startSession();
      const read = await failure(s.withTransaction(async () => c.findOne({}, { session: s })));
      expect([read.code, read.codeName]).toEqual([20, 'IllegalOperation']);
      expect(read.message).toBe('Transaction numbers are only allowed on a replica set member or mongos');
      // On writes the driver rewrites code 20 into its retryable-writes advice, keeping the original.
      const write = await failure(s.withTransaction(async () => c.insertOne({ in: 'txn' }, { session: s })));
      const original = (write as MongoServerError & { originalError?: MongoServerError }).originalError;
      expect(original?.code).toBe(20);
      await s.endSession();
      expect(await c.countDocuments()).toBe(1);
    } finally {
      await standalone.close();
    }
  });
});
