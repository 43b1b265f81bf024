import { describe, expect, it } from '@jest/globals';
import { LoomError } from '@loom/core';
import type { ClientSession } from 'mongodb';
import { useMongoFixture } from './fixture.js';
import { at, claimRequest, newJob } from './jobs.js';

class OrderRejected extends Error {}

describe('transactions on a replica set', () => {
  const fixture = useMongoFixture();

  it("enqueues a job together with the caller's own write when the transaction commits", async () => {
    const store = fixture.newStore();
    await store.init();
    const orders = store.client.db(fixture.mongo.newDatabaseName('app')).collection('orders');
    const id = await store.withTransaction(async (session) => {
      await orders.insertOne({ _id: 'o1' as never, total: 10 }, { session: session as ClientSession });
      const [result] = await store.enqueue([newJob({ idempotencyKey: 'receipt:o1' })], { now: at(0), session });
      return result.id;
    });
    expect(await orders.countDocuments({ _id: 'o1' as never })).toBe(1);
    expect(await store.getJob(id)).toMatchObject({ status: 'queued', idempotencyKey: 'receipt:o1' });
  });

  it('stores neither the order nor the job when the transaction aborts', async () => {
    const store = fixture.newStore();
    await store.init();
    const orders = store.client.db(fixture.mongo.newDatabaseName('app')).collection('orders');
    let enqueuedId = '';
    await expect(
      store.withTransaction(async (session) => {
        await orders.insertOne({ _id: 'o2' as never }, { session: session as ClientSession });
        [{ id: enqueuedId }] = await store.enqueue([newJob({ idempotencyKey: 'receipt:o2' })], { now: at(0), session });
        throw new OrderRejected('payment declined');
      }),
    ).rejects.toBeInstanceOf(OrderRejected);
    expect(await orders.countDocuments({})).toBe(0);
    expect(await store.getJob(enqueuedId)).toBeNull();
    expect(await store.listJobs({ idempotencyKey: 'receipt:o2' })).toEqual([]);
  });

  it("commits a handler's write with the job's completion, or neither", async () => {
    // Retention off: the job finishes at a fixed instant months ago, so a TTL pass (the emulator
    // sweeps every second, mongod every minute) between the completion and the read would remove it.
    const store = fixture.newStore({ retention: { completed: false } });
    await store.init();
    const receipts = store.client.db(fixture.mongo.newDatabaseName('app')).collection('receipts');
    const [{ id }] = await store.enqueue([newJob()], { now: at(0) });
    const [job] = await store.claim(claimRequest());
    const lease = { jobId: id, token: job.lease!.token };

    await expect(
      store.withTransaction(async (session) => {
        await receipts.insertOne({ jobId: id }, { session: session as ClientSession });
        await store.complete(lease, { result: 'sent', now: at(2), session });
        throw new OrderRejected('crash before commit');
      }),
    ).rejects.toBeInstanceOf(OrderRejected);
    expect(await receipts.countDocuments({})).toBe(0);
    expect((await store.getJob(id))?.status).toBe('running');

    await store.withTransaction(async (session) => {
      await receipts.insertOne({ jobId: id }, { session: session as ClientSession });
      await store.complete(lease, { result: 'sent', now: at(3), session });
    });
    expect(await receipts.countDocuments({})).toBe(1);
    expect(await store.getJob(id)).toMatchObject({ status: 'completed', result: 'sent' });
  });

  it("refuses a session that is not the store's", async () => {
    const store = fixture.newStore();
    await store.init();
    await expect(store.enqueue([newJob()], { now: at(0), session: { inTransaction: () => true } })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});

describe('transactions on a standalone', () => {
  const fixture = useMongoFixture({ topology: 'standalone' });

  it('fail with TRANSACTIONS_UNSUPPORTED, naming the replica-set requirement, and store nothing', async () => {
    const store = fixture.newStore();
    await store.init();
    let ran = false;
    const err = await store.withTransaction(async () => void (ran = true)).catch((e: unknown) => e);
    expect(LoomError.is(err, 'TRANSACTIONS_UNSUPPORTED')).toBe(true);
    expect((err as Error).message).toMatch(/replica set/);
    expect(ran).toBe(false);

    const session = store.client.startSession();
    try {
      await expect(store.enqueue([newJob({ idempotencyKey: 'k' })], { now: at(0), session })).rejects.toMatchObject({
        code: 'TRANSACTIONS_UNSUPPORTED',
      });
    } finally {
      await session.endSession();
    }
    expect(await store.listJobs({})).toEqual([]);
  });
});
