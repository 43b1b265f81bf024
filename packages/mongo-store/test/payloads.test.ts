import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { BSON, GridFSBucket, ObjectId, type Db } from 'mongodb';
import { Job, LoomError, type JobContext } from '@loom/core';
import { createTestLoom } from '@loom/testing';
import { MongoStore } from '@loom/mongo-store';
import { useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

// Issue 33, item 4 on MongoDB: payloads and results over `offloadThreshold` live in the payload
// bucket (GridFS layout), the job keeps { fileId, size }; files go with their jobs (explicit
// removals at once, TTL removals by the orphan sweep of `maintain`), and a transaction that aborts
// leaves no file. The JobStore contract of it is in the conformance suite (conformance/payloads.ts).

const HOUR = 3_600_000;
type Ref = { fileId: ObjectId; size: number };
/** The job document's fields these tests read. */
type StoredJob = { _id: ObjectId; payload?: unknown; result?: unknown; payloadRef?: Ref; resultRef?: Ref };
const jobsOf = (db: Db) => db.collection<StoredJob>('loom_jobs');
const big = (kb: number, tag = 'x'): { tag: string; at: Date; blob: string } => ({ tag, at: at(5), blob: tag.repeat(kb * 1024) });

describe.each([['replica set', 'replica-set'] as const, ['standalone', 'standalone'] as const])('the payload bucket on a %s', (_label, topology) => {
  const fixture = useMongoFixture({ topology });

  function open(overrides: Parameters<typeof fixture.newStore>[0] = {}): { store: MongoStore; db: Db; database: string } {
    const database = fixture.mongo.newDatabaseName('payloads');
    const store = fixture.newStore({ database, retention: { completed: false }, ...overrides });
    return { store, db: fixture.mongo.client.db(database), database };
  }
  const counts = async (db: Db): Promise<{ files: number; chunks: number }> => ({
    files: await db.collection('loom_payloads.files').countDocuments(),
    chunks: await db.collection('loom_payloads.chunks').countDocuments(),
  });

  it('keeps a payload over the threshold in a GridFS file; the job keeps its reference and size', async () => {
    const { store, db } = open();
    await store.init();
    const payload = big(600);
    const small = { n: 1 };
    const [{ id }, { id: smallId }] = await store.enqueue([newJob({ payload }), newJob({ payload: small })], { now: at(0) });
    const doc = await jobsOf(db).findOne({ _id: ObjectId.createFromHexString(id) });
    expect(doc?.payload).toBeNull();
    expect(doc?.payloadRef).toEqual({ fileId: expect.any(ObjectId), size: BSON.calculateObjectSize({ v: payload }) - 8 });
    expect((await jobsOf(db).findOne({ _id: ObjectId.createFromHexString(smallId) }))?.payload).toEqual(small);
    expect(await counts(db)).toEqual({ files: 1, chunks: 3 }); // 600 KiB in 255 KiB chunks
    // Any GridFS reader reads it: the BSON of { v: payload }.
    const bytes: Buffer[] = [];
    for await (const part of new GridFSBucket(db, { bucketName: 'loom_payloads' }).openDownloadStream(doc!.payloadRef!.fileId)) bytes.push(part as Buffer);
    expect(BSON.deserialize(Buffer.concat(bytes)).v).toEqual(payload);
    // Lists give the reference, not the payload; the job's own reads give the payload.
    const listed = (await store.listJobs({})).find((j) => j.id === id);
    expect(listed?.payload).toBeUndefined();
    expect(listed?.offloadedPayload).toEqual({ fileId: doc!.payloadRef!.fileId.toHexString(), size: doc!.payloadRef!.size });
    const [summary] = (await store.listJobPage({ statuses: ['queued'], limit: 10 })).filter((s) => s.id === id);
    expect(summary?.payloadSize).toBe(doc!.payloadRef!.size);
    expect((await store.getJob(id))?.payload).toEqual(payload);
    await store.close();
  });

  it('honours offloadThreshold and maxPayloadSize, and offloadThreshold: false keeps values inline', async () => {
    const { store, db } = open({ offloadThreshold: 4096, maxPayloadSize: 64 * 1024 });
    await store.init();
    expect(store.payloadLimits).toEqual({ offloadThreshold: 4096, maxPayloadSize: 64 * 1024 });
    const [{ id }] = await store.enqueue([newJob({ payload: big(5) })], { now: at(0) });
    expect((await jobsOf(db).findOne({ _id: ObjectId.createFromHexString(id) }))?.payloadRef).toBeDefined();
    const refused = await store.enqueue([newJob({ payload: big(65) })], { now: at(0) }).catch((e: unknown) => e);
    expect(LoomError.is(refused, 'PAYLOAD_TOO_LARGE')).toBe(true);
    expect((refused as Error).message).toMatch(/over the store's maxPayloadSize of 65536 bytes; nothing was stored/);
    expect(await counts(db)).toEqual({ files: 1, chunks: 1 });
    await store.close();

    const inline = open({ offloadThreshold: false });
    expect(inline.store.payloadLimits).toEqual({ offloadThreshold: Number.POSITIVE_INFINITY, maxPayloadSize: 16 * 1024 * 1024 });
    await inline.store.init();
    const [{ id: inlineId }] = await inline.store.enqueue([newJob({ payload: big(600) })], { now: at(0) });
    expect((await jobsOf(inline.db).findOne({ _id: ObjectId.createFromHexString(inlineId) }))?.payload).toEqual(big(600));
    await inline.store.close();

    expect(() => fixture.newStore({ offloadThreshold: 10 })).toThrow(/option "offloadThreshold" must be a whole number of bytes from 1024/);
    expect(() => fixture.newStore({ offloadThreshold: false, maxPayloadSize: 32 * 1024 * 1024 })).toThrow(
      /"maxPayloadSize" must be .* with offloadThreshold: false/,
    );
  });

  it('keeps a large result in a file; lists give its size, getJob the result', async () => {
    const { store, db } = open();
    await store.init();
    const [{ id }] = await store.enqueue([newJob()], { now: at(0) });
    const [job] = await store.claim(claimRequest());
    const result = big(300, 'r');
    await store.complete({ jobId: id, token: job!.lease!.token }, { result, now: at(2) });
    const doc = await jobsOf(db).findOne({ _id: ObjectId.createFromHexString(id) });
    expect(doc).not.toHaveProperty('result');
    expect(doc?.resultRef?.size).toBe(BSON.calculateObjectSize({ v: result }) - 8);
    expect((await store.getJob(id))?.result).toEqual(result);
    const [summary] = await store.listJobPage({ statuses: ['completed'], limit: 1 });
    expect(summary?.resultSize).toBe(doc?.resultRef?.size);
    expect((await store.listJobs({}))[0]?.result).toBeUndefined();
    await store.close();
  });

  it('deletes the files with the job: removeJob, purgeDeadLetters, a deduplicated or debounced enqueue', async () => {
    const { store, db } = open();
    await store.init();
    // removeJob of a completed job with a large payload and result.
    const [{ id }] = await store.enqueue([newJob({ payload: big(300) })], { now: at(0) });
    const [job] = await store.claim(claimRequest());
    await store.complete({ jobId: id, token: job!.lease!.token }, { result: big(300, 'r'), now: at(2) });
    expect((await counts(db)).files).toBe(2);
    await store.removeJob(id, at(3));
    expect(await counts(db)).toEqual({ files: 0, chunks: 0 });

    // A dead letter keeps its file until it is purged.
    const [{ id: deadId }] = await store.enqueue([newJob({ payload: big(300, 'd') })], { now: at(10) });
    const [dying] = await store.claim(claimRequest('worker-a', at(11)));
    await store.deadLetter({ jobId: deadId, token: dying!.lease!.token }, { reason: 'gave up', now: at(12) });
    await store.maintain(at(10 * HOUR));
    expect((await store.getJob(deadId))?.payload).toEqual(big(300, 'd'));
    expect(await store.purgeDeadLetters({})).toBe(1);
    expect(await counts(db)).toEqual({ files: 0, chunks: 0 });

    // The second enqueue of a key stores no file.
    const [first] = await store.enqueue([newJob({ payload: big(300), idempotencyKey: 'k' })], { now: at(20) });
    const [again] = await store.enqueue([newJob({ payload: big(301), idempotencyKey: 'k' })], { now: at(21) });
    expect(again).toEqual({ id: first!.id, deduplicated: true });
    expect((await counts(db)).files).toBe(1);

    // A debounced enqueue replaces the queued job's file.
    await store.enqueue([newJob({ payload: big(300, 'a'), debounceKey: 'd', runAt: at(100) })], { now: at(22) });
    await store.enqueue([newJob({ payload: big(300, 'b'), debounceKey: 'd', runAt: at(100) })], { now: at(23) });
    expect((await counts(db)).files).toBe(2);
    await store.close();
  });

  it('the orphan sweep deletes files whose jobs the TTL index removed, after the grace period only', async () => {
    const { store, db } = open();
    await store.init();
    const [{ id: gone }, { id: kept }] = await store.enqueue([newJob({ payload: big(300, 'g') }), newJob({ payload: big(300, 'k') })], { now: at(0) });
    // What the retention TTL index does: delete the job document, and nothing else.
    await db.collection('loom_jobs').deleteOne({ _id: ObjectId.createFromHexString(gone) });
    await store.maintain(at(HOUR / 2)); // within the grace period: a file may belong to an enqueue under way
    expect((await counts(db)).files).toBe(2);
    await store.maintain(at(2 * HOUR));
    expect(await counts(db)).toEqual({ files: 1, chunks: 2 });
    expect((await store.getJob(kept))?.payload).toEqual(big(300, 'k'));
    // The referenced file is asked about again a day later, not at every sweep.
    const file = await db.collection<{ metadata: { checkAt: Date } }>('loom_payloads.files').findOne({});
    expect(file?.metadata.checkAt).toEqual(at(2 * HOUR + 24 * HOUR));
    await store.close();
  });

  it('a claim reads no payload: its reply stays the same size whatever the payload (payload bucket read once per claim)', async () => {
    const { store } = open({ url: fixture.mongo.uri, client: undefined, clientOptions: { monitorCommands: true } });
    await store.init();
    const sizes: number[] = [];
    const commands: string[] = [];
    const client = store.client;
    const onReply = (event: { commandName: string; reply: unknown }): void => {
      commands.push(event.commandName);
      if (event.commandName === 'findAndModify' || event.commandName === 'update') sizes.push(BSON.calculateObjectSize(event.reply as BSON.Document));
    };
    for (const kb of [300, 3000]) {
      await store.enqueue([newJob({ payload: big(kb) })], { now: at(0) });
      client.on('commandSucceeded', onReply);
      const [job] = await store.claim(claimRequest());
      client.off('commandSucceeded', onReply);
      expect((job!.payload as { blob: string }).blob).toHaveLength(kb * 1024);
      await store.complete({ jobId: job!.id, token: job!.lease!.token }, { now: at(2) });
    }
    expect(commands.filter((c) => c === 'find')).toHaveLength(2); // one chunks read per claim
    expect(sizes.length).toBeGreaterThanOrEqual(2);
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThan(64);
    await store.close();
  });
});

describe('a claim whose payload read fails', () => {
  const fixture = useMongoFixture();

  it('gives the jobs back, attempt not spent, and rejects; the next claim takes them', async () => {
    const store = fixture.newStore({ retention: { completed: false } });
    await store.init();
    const [{ id }] = await store.enqueue([newJob({ payload: big(300) })], { now: at(0) });
    const chunks = (store as unknown as { collections: { payloadChunks: { find: (...args: unknown[]) => unknown } } }).collections.payloadChunks;
    const find = chunks.find.bind(chunks);
    chunks.find = () => {
      throw new Error('connection reset');
    };
    await expect(store.claim(claimRequest())).rejects.toThrow('connection reset');
    expect(await store.getJob(id, { values: false })).toMatchObject({ status: 'queued', attempt: 0 });
    chunks.find = find;
    const [job] = await store.claim(claimRequest('worker-b', at(2)));
    expect(job).toMatchObject({ id, attempt: 1, payload: big(300) });
    await store.close();
  });
});

describe('the payload bucket in transactions', () => {
  const fixture = useMongoFixture();

  it('an enqueue in a transaction that aborts leaves no file; a completion that aborts neither', async () => {
    const database = fixture.mongo.newDatabaseName('payloads');
    const store = fixture.newStore({ database, retention: { completed: false } });
    const db = fixture.mongo.client.db(database);
    await store.init();
    await expect(
      store.withTransaction(async (session) => {
        await store.enqueue([newJob({ payload: big(600) })], { now: at(0), session });
        expect(await db.collection('loom_payloads.files').countDocuments({}, { session: session as never })).toBe(1);
        throw new Error('the order insert failed');
      }),
    ).rejects.toThrow('the order insert failed');
    expect(await db.collection('loom_payloads.files').countDocuments()).toBe(0);
    expect(await db.collection('loom_payloads.chunks').countDocuments()).toBe(0);
    expect(await db.collection('loom_jobs').countDocuments()).toBe(0);

    const [{ id }] = await store.enqueue([newJob()], { now: at(0) });
    const [job] = await store.claim(claimRequest());
    await expect(
      store.withTransaction(async (session) => {
        await store.complete({ jobId: id, token: job!.lease!.token }, { result: big(600, 'r'), now: at(2), session });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await db.collection('loom_payloads.chunks').countDocuments()).toBe(0);
    expect((await store.getJob(id))?.status).toBe('running');
    await store.close();
  });
});

// The engine end to end: a handler gets its 1 MiB payload and returns a 1 MiB result; a child it
// enqueues with a large payload gets it too.
const seen: unknown[] = [];

@Job({ name: 'crunch' })
class Crunch {
  async run(payload: { blob: string }, ctx: JobContext): Promise<{ echo: string }> {
    seen.push(payload.blob.length);
    if (payload.blob.startsWith('p')) await ctx.enqueue(Crunch, { blob: 'c'.repeat(512 * 1024) });
    return { echo: payload.blob.toUpperCase() };
  }
}

describe('an engine on MongoStore with large payloads', () => {
  const fixture = useMongoFixture();

  it('hands handlers their payload and stores their result, transparently', async () => {
    const store = fixture.newStore({ retention: { completed: false } });
    const t = await createTestLoom({ jobs: [Crunch], store });
    const { id } = await t.enqueue(Crunch, { blob: 'p'.repeat(1024 * 1024) });
    await t.runUntilIdle();
    expect(seen).toEqual([1024 * 1024, 512 * 1024]);
    const job = await t.getJob(id);
    expect(job?.status).toBe('completed');
    expect((job?.result as { echo: string }).echo).toBe('P'.repeat(1024 * 1024));
    expect(job?.offloadedResult?.size).toBeGreaterThan(1024 * 1024);
    const page = await t.loom.jobs.list({ status: 'completed' });
    expect(page.jobs.every((j) => (j.payloadSize ?? 0) > 256 * 1024)).toBe(true);
    await t.stop();
    await store.close();
  });
});
