import { describe, expect, it } from '@jest/globals';
import type { Collection } from 'mongodb';
import type { DeadLetterDocument, JobDocument } from '../src/schema/documents.js';
import { deadLetterDocument } from '../src/schema/updates.js';
import { useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

// On a standalone a dead-letter move is steps (write the dead letter marked pending, delete the
// fenced job, unmark). These tests leave the database exactly as a crash between the steps would,
// then restart.
const fixture = useMongoFixture({ topology: 'standalone' });

async function setup() {
  const database = fixture.mongo.newDatabaseName('dlq');
  const store = fixture.newStore({ database });
  await store.init();
  const db = fixture.mongo.client.db(database);
  return {
    database,
    store,
    jobs: db.collection<JobDocument>('loom_jobs'),
    deadLetters: db.collection<DeadLetterDocument>('loom_dead_letters'),
  };
}

async function crashAfterWritingDeadLetter(jobs: Collection<JobDocument>, deadLetters: Collection<DeadLetterDocument>, id: string) {
  const job = (await jobs.findOne({ status: 'running' }))!;
  expect(job._id.toHexString()).toBe(id);
  await deadLetters.insertOne({ ...deadLetterDocument(job, { reason: 'boom', now: at(5) }), pending: 'move' });
}

describe('dead-letter reconciliation at init() on a standalone', () => {
  it('finishes a move that crashed after writing the dead letter', async () => {
    const { database, store, jobs, deadLetters } = await setup();
    const [{ id }] = await store.enqueue([newJob({ idempotencyKey: 'k1' })], { now: at(0) });
    await store.claim(claimRequest());
    await crashAfterWritingDeadLetter(jobs, deadLetters, id);

    const restarted = fixture.newStore({ database });
    await restarted.init();
    expect(await jobs.countDocuments({})).toBe(0);
    expect(await restarted.getJob(id)).toMatchObject({ status: 'dead', deadReason: 'boom' });
    // The key is free again, as after a clean move.
    const [again] = await restarted.enqueue([newJob({ idempotencyKey: 'k1' })], { now: at(10) });
    expect(again.deduplicated).toBe(false);
  });

  it('drops a stale dead letter when another worker took the job over meanwhile', async () => {
    const { database, store, jobs, deadLetters } = await setup();
    const [{ id }] = await store.enqueue([newJob()], { now: at(0) });
    await store.claim(claimRequest('worker-a', at(1)));
    await crashAfterWritingDeadLetter(jobs, deadLetters, id);
    // worker-a's lease expires and worker-b reclaims: the job lives on under a new token.
    const [reclaimed] = await store.claim(claimRequest('worker-b', at(60_000)));
    expect(reclaimed.id).toBe(id);

    const restarted = fixture.newStore({ database });
    await restarted.init();
    expect(await deadLetters.countDocuments({})).toBe(0);
    expect(await restarted.getJob(id)).toMatchObject({ status: 'running', lease: { owner: 'worker-b' } });
  });

  it('drops the dead letter of a replay that crashed before deleting it', async () => {
    const { database, store, jobs, deadLetters } = await setup();
    const [{ id }] = await store.enqueue([newJob()], { now: at(0) });
    const [job] = await store.claim(claimRequest());
    await store.deadLetter({ jobId: id, token: job.lease!.token }, { reason: 'boom', now: at(2) });
    // The replay's first steps (mark the letter, insert the job again) without the last (delete the letter).
    const dead = (await deadLetters.findOneAndUpdate({}, { $set: { pending: 'replay' } }))!;
    await jobs.insertOne({ ...dead.job, _id: dead._id, status: 'queued', attempt: 0, runAt: at(3), claimAt: at(3) });

    const restarted = fixture.newStore({ database });
    await restarted.init();
    expect(await deadLetters.countDocuments({})).toBe(0);
    expect((await restarted.getJob(id))?.status).toBe('queued');
  });

  it('leaves a worker whose move lost the lease with LEASE_LOST and no dead letter', async () => {
    const { store } = await setup();
    const [{ id }] = await store.enqueue([newJob()], { now: at(0) });
    const [first] = await store.claim(claimRequest('worker-a', at(1)));
    await store.claim(claimRequest('worker-b', at(60_000)));
    await expect(store.deadLetter({ jobId: id, token: first.lease!.token }, { reason: 'late', now: at(60_001) })).rejects.toMatchObject({
      code: 'LEASE_LOST',
    });
    expect(await store.listDeadLetters({})).toEqual([]);
    expect((await store.getJob(id))?.status).toBe('running');
  });
});

describe('dead-letter moves interrupted on a standalone leave marks that init() resolves', () => {
  it('unmarks a letter whose move finished but for its last step, and keeps it dead', async () => {
    const { database, store, deadLetters } = await setup();
    const [{ id }] = await store.enqueue([newJob()], { now: at(0) });
    const [job] = await store.claim(claimRequest());
    await store.deadLetter({ jobId: id, token: job.lease!.token }, { reason: 'boom', now: at(2) });
    await deadLetters.updateOne({}, { $set: { pending: 'move' } }); // the crash came before the unmark
    const restarted = fixture.newStore({ database });
    await restarted.init();
    expect(await deadLetters.countDocuments({ pending: { $exists: true } })).toBe(0);
    expect(await restarted.getJob(id)).toMatchObject({ status: 'dead' });
  });

  it('keeps a letter whose replay crashed before inserting the job', async () => {
    const { database, store, deadLetters } = await setup();
    const [{ id }] = await store.enqueue([newJob()], { now: at(0) });
    const [job] = await store.claim(claimRequest());
    await store.deadLetter({ jobId: id, token: job.lease!.token }, { reason: 'boom', now: at(2) });
    await deadLetters.updateOne({}, { $set: { pending: 'replay' } });
    const restarted = fixture.newStore({ database });
    await restarted.init();
    expect(await restarted.getJob(id)).toMatchObject({ status: 'dead' });
    expect(await restarted.replayDeadLetter(id, at(3))).toBe(id);
  });
});
