import { afterEach, describe, expect, it } from '@jest/globals';
import type { ClientSession, Collection, Document } from 'mongodb';
import { freshCollectionEachTest, serverError, type Target } from './target.js';

// A drop takes its collection's exclusive lock, which waits for every open transaction that used
// the collection (a transaction keeps its locks until it commits or aborts): "new DDL operations
// that affect the same database(s) or collection(s) wait behind the transaction. While these
// pending DDL operations exist, new transactions that access the same database(s) or
// collection(s) as the pending DDL operations cannot obtain the required locks and will abort
// after waiting maxTransactionLockRequestTimeoutMillis" (MongoDB manual, Production
// Considerations (Transactions): DDL Operations). With maxTimeMS the drop gives up with
// MaxTimeMSExpired (50); without it, it happens after the commit, and the transaction's writes
// are in the collection it drops: they never land in a collection created after the drop.
let t: Target;
let coll: Collection<Document>;
const sessions: ClientSession[] = [];
freshCollectionEachTest('dropped', async (target, fresh) => {
  t = target;
  coll = fresh;
  await coll.insertOne({ _id: 1, v: 'before' } as never);
});
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.endSession();
});

function session(): ClientSession {
  const s = t.client.startSession();
  sessions.push(s);
  return s;
}

/** A transaction that inserted `_id: 2` into the collection and stays open. */
async function openWriter(): Promise<ClientSession> {
  const s = session();
  s.startTransaction();
  await coll.insertOne({ _id: 2, v: 'txn' } as never, { session: s });
  return s;
}

/** Tracks whether `p` settled; `settled()` is read after a few round trips to the server. */
function track<T>(p: Promise<T>): { settled(): Promise<boolean>; done: Promise<T> } {
  let settled = false;
  const done = p.finally(() => (settled = true));
  done.catch(() => undefined);
  return {
    done,
    async settled() {
      // Each round trip lets the server run whatever the drop was waiting for, if it could.
      for (let i = 0; i < 5; i++) await t.db.command({ ping: 1 });
      return settled;
    },
  };
}

async function names(): Promise<string[]> {
  return (await t.db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);
}

describe('drop of a collection an open transaction used', () => {
  it('fails with MaxTimeMSExpired once its maxTimeMS has passed, dropping nothing; the commit then lands', async () => {
    const s = await openWriter();
    const err = await serverError(t.db.command({ drop: coll.collectionName, maxTimeMS: 150 }));
    expect(err.code).toBe(50);
    expect(await names()).toContain(coll.collectionName);
    await s.commitTransaction();
    expect((await coll.find<{ v: string }>({}).sort({ _id: 1 }).toArray()).map((d) => d.v)).toEqual(['before', 'txn']);
  });

  it("waits for the commit, drops the transaction's writes with the collection, and a collection created after it holds none of them", async () => {
    const s = await openWriter();
    const drop = track(coll.drop());
    expect(await drop.settled()).toBe(false);
    await s.commitTransaction();
    expect(await drop.done).toBe(true);
    expect(await names()).not.toContain(coll.collectionName);
    await coll.insertOne({ _id: 3, v: 'after' } as never);
    expect((await coll.find<{ v: string }>({}).toArray()).map((d) => d.v)).toEqual(['after']);
  });

  it('waits for an abort as well, then drops', async () => {
    const s = await openWriter();
    const drop = track(coll.drop());
    expect(await drop.settled()).toBe(false);
    await s.abortTransaction();
    await drop.done;
    expect(await names()).not.toContain(coll.collectionName);
  });

  it('waits for a transaction that only read the collection', async () => {
    const s = session();
    s.startTransaction();
    await coll.findOne({}, { session: s });
    const err = await serverError(t.db.command({ drop: coll.collectionName, maxTimeMS: 100 }));
    expect(err.code).toBe(50);
    await s.commitTransaction();
    await coll.drop();
    expect(await names()).not.toContain(coll.collectionName);
  });

  it('does not wait for a transaction that used only other collections', async () => {
    const s = session();
    s.startTransaction();
    await t.db.collection(`${coll.collectionName}_other`).insertOne({ _id: 1 } as never, { session: s });
    await t.db.command({ drop: coll.collectionName, maxTimeMS: 100 });
    expect(await names()).not.toContain(coll.collectionName);
    await s.abortTransaction();
  });

  it('while it waits, a transaction that had not used the collection cannot start to: LockTimeout (24), TransientTransactionError', async () => {
    const s = await openWriter();
    const drop = track(coll.drop());
    expect(await drop.settled()).toBe(false);
    const late = session();
    late.startTransaction();
    const err = await serverError(coll.insertOne({ _id: 4 } as never, { session: late }));
    expect(err.code).toBe(24);
    expect(err.hasErrorLabel('TransientTransactionError')).toBe(true);
    await late.abortTransaction();
    await s.commitTransaction();
    await drop.done;
    expect(await names()).not.toContain(coll.collectionName);
  });
});

describe('dropDatabase while a transaction used one of its collections', () => {
  it('fails with MaxTimeMSExpired once its maxTimeMS has passed, and waits for the commit without it', async () => {
    const s = await openWriter();
    const err = await serverError(t.db.command({ dropDatabase: 1, maxTimeMS: 150 }));
    expect(err.code).toBe(50);
    expect(await names()).toContain(coll.collectionName);
    const drop = track(t.db.dropDatabase());
    expect(await drop.settled()).toBe(false);
    await s.commitTransaction();
    await drop.done;
    expect(await names()).toEqual([]);
  });
});
