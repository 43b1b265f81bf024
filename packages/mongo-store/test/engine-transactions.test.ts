import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, type JobContext, type JobStore } from '@loom/core';
import { createTestLoom } from '@loom/testing';
import type { ClientSession, Collection } from 'mongodb';
import { useMongoFixture } from './fixture.js';

// ctx.transaction against the engine's own heartbeats, on a replica set: the lease is renewed to
// two lengths before the transaction and heartbeats are held back while it is open, so a callback
// that takes several heartbeat intervals (up to about 1.6 leases) runs once and commits (before:
// every heartbeat after the snapshot made the commit fail with WriteConflict and the driver re-ran
// the whole callback). Past that, heartbeats resume: the callback runs again, the job is kept.

let receipts: Collection<{ jobId: string }>;
let callbackRuns = 0;
/** Moves the engine's clock from inside the callback, as a slow callback would let time pass. */
let during: () => Promise<void> = async () => {};

@Job({ name: 'tx-receipt', retries: 2 })
class TxReceipt {
  async run(_payload: undefined, ctx: JobContext): Promise<void> {
    await ctx.transaction(async (session) => {
      callbackRuns++;
      await receipts.insertOne({ jobId: ctx.jobId }, { session: session as ClientSession });
      await during();
    });
  }
}

/** The store, with every heartbeat's promise kept so the test can wait for it. */
function watchHeartbeats(store: JobStore): { store: JobStore; beats: Promise<unknown>[] } {
  const beats: Promise<unknown>[] = [];
  const wrapped = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (prop === 'extendLease' || prop === 'heartbeatMany') {
        return (...args: unknown[]) => {
          const p = (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          beats.push(p.catch(() => undefined));
          return p;
        };
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: wrapped, beats };
}

describe('ctx.transaction with heartbeats (replica set)', () => {
  const fixture = useMongoFixture();

  it('runs a callback that outlasts several heartbeats once, and commits its write with the completion', async () => {
    const mongoStore = fixture.newStore({ retention: { completed: false } });
    const { store, beats } = watchHeartbeats(mongoStore);
    const t = await createTestLoom({ jobs: [TxReceipt], store, lease: '3s' });
    receipts = mongoStore.client.db(fixture.mongo.newDatabaseName('app')).collection('receipts');
    callbackRuns = 0;
    during = async () => {
      // Two heartbeat intervals (1 s each) pass while the transaction is open; any heartbeat that
      // fires lands before the commit.
      t.clock.advance('2500ms');
      await Promise.all(beats);
    };
    const { id } = await t.enqueue(TxReceipt, undefined);
    await t.runUntilIdle();
    during = async () => {};
    await t.runUntilIdle();
    expect(callbackRuns).toBe(1);
    expect(await receipts.countDocuments({ jobId: id })).toBe(1);
    expect(await t.getJob(id)).toMatchObject({ status: 'completed', attempt: 1 });
    await t.stop();
  });

  it('keeps the job when a callback outlasts the held-back heartbeats: the callback runs again and commits once', async () => {
    const mongoStore = fixture.newStore({ retention: { completed: false } });
    const { store, beats } = watchHeartbeats(mongoStore);
    const t = await createTestLoom({ jobs: [TxReceipt], store, lease: '3s' });
    receipts = mongoStore.client.db(fixture.mongo.newDatabaseName('app')).collection('receipts');
    callbackRuns = 0;
    let slow = true;
    during = async () => {
      if (!slow) return;
      slow = false;
      // Past two leases less a third (5 s): a heartbeat must keep the job, at the cost of this callback run.
      t.clock.advance('5500ms');
      await Promise.all(beats);
    };
    const { id } = await t.enqueue(TxReceipt, undefined);
    await t.runUntilIdle();
    expect(callbackRuns).toBe(2);
    expect(await receipts.countDocuments({ jobId: id })).toBe(1);
    expect(await t.getJob(id)).toMatchObject({ status: 'completed', attempt: 1 });
    await t.stop();
  });
});
