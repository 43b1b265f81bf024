import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { ChangeStream, ChangeStreamDocument, Collection, Document, ResumeToken } from 'mongodb';
import { openTarget, type Target } from './target.js';

let t: Target;
let coll: Collection<Document>;
let n = 0;
const streams: ChangeStream[] = [];

beforeAll(async () => {
  t = await openTarget();
});
afterAll(async () => {
  for (const s of streams) await s.close();
  await t.close();
});
beforeEach(async () => {
  coll = t.db.collection(`cs_${++n}`);
  await t.db.createCollection(coll.collectionName);
});

function watch(pipeline: Document[] = [], options: Parameters<Collection['watch']>[1] = {}): ChangeStream<Document, ChangeStreamDocument<Document>> {
  const s = coll.watch(pipeline, { maxAwaitTimeMS: 50, ...options });
  streams.push(s);
  return s;
}

/** Opens the server-side cursor now (the driver opens it lazily) so later writes are seen. */
async function started<T extends ChangeStream>(s: T): Promise<T> {
  await s.tryNext();
  return s;
}

describe('change streams', () => {
  it('reports insert, update, replace and delete events in order', async () => {
    const s = await started(watch());
    await coll.insertOne({ _id: 1 as never, a: 1, sub: { x: 1 } });
    await coll.updateOne({ _id: 1 as never }, { $set: { 'sub.x': 2, b: true }, $unset: { a: '' } });
    await coll.replaceOne({ _id: 1 as never }, { c: 3 });
    await coll.deleteOne({ _id: 1 as never });
    const insert = await s.next();
    expect(insert.operationType).toBe('insert');
    if (insert.operationType !== 'insert') throw new Error('unreachable');
    expect(insert.fullDocument).toEqual({ _id: 1, a: 1, sub: { x: 1 } });
    expect(insert.documentKey).toEqual({ _id: 1 });
    expect(insert.ns).toEqual({ db: t.db.databaseName, coll: coll.collectionName });
    const update = await s.next();
    if (update.operationType !== 'update') throw new Error(`expected update, got ${update.operationType}`);
    expect(update.updateDescription.updatedFields).toEqual({ 'sub.x': 2, b: true });
    expect(update.updateDescription.removedFields).toEqual(['a']);
    expect(update.fullDocument).toBeUndefined();
    const replace = await s.next();
    if (replace.operationType !== 'replace') throw new Error(`expected replace, got ${replace.operationType}`);
    expect(replace.fullDocument).toEqual({ _id: 1, c: 3 });
    const del = await s.next();
    expect(del.operationType).toBe('delete');
    expect((del as { documentKey: unknown }).documentKey).toEqual({ _id: 1 });
  });

  // "lsid": the identifier for the session associated with the transaction; "txnNumber": together
  // with the lsid, a number that helps uniquely identify a transaction. "Only present if the
  // operation is part of a multi-document transaction." (MongoDB manual, Change Events.)
  it('gives the events of a transaction its lsid and txnNumber, and other events neither', async () => {
    const s = await started(watch());
    await coll.insertOne({ _id: 1 as never, n: 0 });
    const session = t.client.startSession();
    let txnNumber: number | undefined;
    try {
      await session.withTransaction(async () => {
        await coll.insertOne({ _id: 2 as never }, { session });
        await coll.updateOne({ _id: 1 as never }, { $inc: { n: 1 } }, { session });
        await coll.deleteOne({ _id: 1 as never }, { session });
      });
      // The number the driver sent (it applies a transaction's number with its first command).
      txnNumber = session.serverSession?.txnNumber;
    } finally {
      await session.endSession();
    }
    await coll.insertOne({ _id: 3 as never });
    const events = [await s.next(), await s.next(), await s.next(), await s.next(), await s.next()];
    expect(events.map((e) => e.operationType)).toEqual(['insert', 'insert', 'update', 'delete', 'insert']);
    const [before, ...rest] = events;
    const after = rest.pop();
    for (const plain of [before, after]) {
      expect(plain).not.toHaveProperty('lsid');
      expect(plain).not.toHaveProperty('txnNumber');
    }
    expect(txnNumber).toBeGreaterThan(0);
    for (const e of rest) {
      expect(e.txnNumber).toBe(txnNumber);
      expect(e.lsid?.id).toEqual(session.id?.id);
      expect(Object.keys(e.lsid ?? {})).toEqual(['id', 'uid']);
    }
  });

  it('filters with a $match pipeline, as the job store watches inserts', async () => {
    const s = await started(watch([{ $match: { operationType: 'insert' } }]));
    await coll.insertOne({ _id: 'x' as never });
    await coll.updateOne({ _id: 'x' as never }, { $set: { y: 1 } });
    await coll.deleteOne({ _id: 'x' as never });
    await coll.insertOne({ _id: 'y' as never });
    const a = await s.next();
    const b = await s.next();
    expect([a.operationType, b.operationType]).toEqual(['insert', 'insert']);
    expect([(a as { documentKey: { _id: unknown } }).documentKey._id, (b as { documentKey: { _id: unknown } }).documentKey._id]).toEqual(['x', 'y']);
  });

  it('projects events with $project as mongod does: input field order, paths through arrays', async () => {
    const s = await started(watch([{ $match: { operationType: 'insert' } }, { $project: { 'fullDocument.a.b': 1, operationType: 1 } }]));
    await coll.insertOne({ _id: 1 as never, a: [1, { b: 2, c: 3 }, { c: 4 }, [{ b: 5 }]], z: 6 });
    const event = await s.next();
    expect(Object.keys(event)).toEqual(['_id', 'operationType', 'fullDocument']);
    expect((event as { fullDocument: unknown }).fullDocument).toEqual({ a: [{ b: 2 }, {}, [{ b: 5 }]] });
  });

  it("looks up the current document for updates with fullDocument: 'updateLookup'", async () => {
    const s = await started(watch([], { fullDocument: 'updateLookup' }));
    await coll.insertOne({ _id: 1 as never, n: 1 });
    await coll.updateOne({ _id: 1 as never }, { $inc: { n: 1 } });
    await s.next();
    const update = await s.next();
    if (update.operationType !== 'update') throw new Error('expected update');
    expect(update.fullDocument).toEqual({ _id: 1, n: 2 });
  });

  it('resumes after a token, delivering only later events', async () => {
    const s = await started(watch());
    await coll.insertMany([{ _id: 1 }, { _id: 2 }, { _id: 3 }] as never[]);
    const first = await s.next();
    const token: ResumeToken = first._id;
    await s.close();
    const resumed = watch([], { resumeAfter: token });
    const events = [await resumed.next(), await resumed.next()];
    expect(events.map((e) => (e as { documentKey: { _id: unknown } }).documentKey._id)).toEqual([2, 3]);
    expect(resumed.resumeToken).toEqual(events[1]._id);
    expect(events[1]._id).not.toEqual(token);
  });

  it('returns an empty awaiting getMore after maxAwaitTimeMS and wakes for a new event', async () => {
    const s = await started(watch());
    expect(await s.tryNext()).toBeNull();
    const pending = s.next();
    await coll.insertOne({ _id: 'late' as never });
    const event = await pending;
    expect((event as { documentKey: { _id: unknown } }).documentKey._id).toBe('late');
  });

  it('shows a committed transaction as its individual events', async () => {
    const s = await started(watch());
    const session = t.client.startSession();
    await session.withTransaction(async () => {
      await coll.insertOne({ _id: 1 } as never, { session });
      await coll.updateOne({ _id: 1 as never }, { $set: { done: true } }, { session });
    });
    await session.endSession();
    const a = await s.next();
    const b = await s.next();
    expect([a.operationType, b.operationType]).toEqual(['insert', 'update']);
  });

  it('ends a collection stream with drop and invalidate when the collection is dropped', async () => {
    const s = await started(watch());
    await coll.insertOne({ _id: 1 as never });
    await coll.drop();
    expect((await s.next()).operationType).toBe('insert');
    expect((await s.next()).operationType).toBe('drop');
    expect((await s.next()).operationType).toBe('invalidate');
  });
});

/** The raw commands of a change stream (one session: a cursor's getMore must use its session). */
/** A change event as the raw getMore returns it: the fields these tests read. */
type ChangeEvent = Document & { operationType: string; documentKey?: { _id: unknown } };

async function openStream(
  pipeline: Document[],
): Promise<{ id: unknown; getMore(maxTimeMS: number): Promise<{ nextBatch: ChangeEvent[]; postBatchResumeToken: ResumeToken }>; close(): Promise<void> }> {
  const session = t.client.startSession();
  const opened = await t.db.command({ aggregate: coll.collectionName, pipeline: [{ $changeStream: {} }, ...pipeline], cursor: {} }, { session });
  const id = (opened.cursor as { id: unknown }).id;
  return {
    id,
    async getMore(maxTimeMS) {
      const reply = await t.db.command({ getMore: id, collection: coll.collectionName, maxTimeMS }, { session });
      return reply.cursor as { nextBatch: ChangeEvent[]; postBatchResumeToken: ResumeToken };
    },
    async close() {
      await t.db.command({ killCursors: coll.collectionName, cursors: [id] }, { session });
      await session.endSession();
    },
  };
}

describe("a change stream's awaiting getMore", () => {
  it('answers when an event passing its pipeline arrives, not on writes the stream does not report', async () => {
    const other = t.db.collection(`${coll.collectionName}_other`);
    await coll.insertOne({ _id: 'old' as never });
    const stream = await openStream([{ $match: { operationType: 'insert' } }]);
    // A minute: far longer than the test, so only an event can end this getMore.
    const pending = stream.getMore(60_000);
    await coll.updateOne({ _id: 'old' as never }, { $set: { x: 1 } });
    await other.insertOne({ _id: 'elsewhere' as never });
    await coll.deleteOne({ _id: 'old' as never });
    await coll.insertOne({ _id: 'new' as never });
    const batch = await pending;
    expect(batch.nextBatch.map((e) => [e.operationType, (e.documentKey as { _id: unknown })._id])).toEqual([['insert', 'new']]);
    await stream.close();
  });

  it('answers with an empty batch at maxAwaitTimeMS, its resume token past the events it skipped', async () => {
    const stream = await openStream([{ $match: { operationType: 'insert' } }]);
    await coll.insertOne({ _id: 'seen' as never });
    expect((await stream.getMore(50)).nextBatch.map((e) => e.operationType)).toEqual(['insert']);
    await coll.updateOne({ _id: 'seen' as never }, { $set: { skipped: true } });
    const empty = await stream.getMore(50);
    expect(empty.nextBatch).toEqual([]);
    await coll.insertOne({ _id: 'after' as never });
    // Resuming from that token (without the filter) starts after the update the stream skipped.
    const resumed = watch([], { startAfter: empty.postBatchResumeToken });
    const next = await resumed.next();
    expect([next.operationType, (next as { documentKey: { _id: unknown } }).documentKey._id]).toEqual(['insert', 'after']);
    await stream.close();
  });
});
