/// <reference types="jest" />
import type { CreatedBatch, JobRecord, JobStore, NewJob } from '@loom/core';
import { at, claimJobs, HEAVY_TEST_MS, leaseOf, mustGet, newJob, type ConformanceContext } from './harness.js';
import { sampleError } from './transitions.js';

/** The callbacks of the batches these tests create: one job of each kind, named after it. */
const CALLBACKS = {
  complete: newJob({ name: 'on-complete', payload: { cb: 'complete' } }),
  success: newJob({ name: 'on-success', payload: { cb: 'success' } }),
  failure: newJob({ name: 'on-failure', payload: { cb: 'failure' } }),
};

/**
 * `atomic`: the store can write a member's end and its batch's counts together (on MongoDB, in a
 * transaction). A store that cannot must refuse batches, storing nothing.
 */
export function describeBatches(ctx: ConformanceContext, atomic: boolean): void {
  if (!atomic) {
    describe('batches, on a store without transactions', () => {
      it('createBatch refuses with TRANSACTIONS_UNSUPPORTED and stores nothing', async () => {
        await expect(ctx.store.createBatch({ jobs: [newJob()], callbacks: CALLBACKS }, { now: at(0) })).rejects.toMatchObject({
          code: 'TRANSACTIONS_UNSUPPORTED',
        });
        expect(await ctx.store.listJobs({})).toEqual([]);
      });
    });
    return;
  }
  describe('batches (createBatch, counters moved by the members’ ends, callbacks enqueued once)', () => {
    async function create(n: number, callbacks: Partial<Record<keyof typeof CALLBACKS, NewJob>> = CALLBACKS): Promise<CreatedBatch> {
      const batch = await ctx.store.createBatch({ jobs: Array.from({ length: n }, (_, i) => newJob({ payload: { i } })), callbacks }, { now: at(0) });
      expect(batch.jobIds).toHaveLength(n);
      return batch;
    }

    /** The callback jobs stored so far, by name. */
    async function callbacks(): Promise<JobRecord[]> {
      const jobs = await Promise.all(['on-complete', 'on-success', 'on-failure'].map((name) => ctx.store.listJobs({ name })));
      return jobs.flat();
    }

    async function claimAll(n: number, now = at(1)): Promise<JobRecord[]> {
      const jobs = await claimJobs(ctx.store, { limit: n, now });
      expect(jobs).toHaveLength(n);
      return jobs;
    }

    it('stores the members queued with batchId and the batch with its counts', async () => {
      const batch = await create(3);
      for (const id of batch.jobIds) expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'queued', batchId: batch.id, name: 'send' });
      expect(await ctx.store.getBatch(batch.id)).toEqual({ id: batch.id, total: 3, completed: 0, dead: 0, cancelled: 0, pending: 3, createdAt: at(0) });
      expect(await ctx.store.getBatch('no-such-batch')).toBeNull();
      expect(await callbacks()).toEqual([]);
    });

    it('each end moves its counter; the last one finishes the batch and enqueues complete and failure once', async () => {
      const batch = await create(4);
      const [a, b, c, d] = await claimAll(4);
      await ctx.store.complete(leaseOf(a!), { result: 1, now: at(10) });
      expect(await ctx.store.completeMany([{ lease: leaseOf(b!) }], at(11))).toEqual(['completed']);
      await ctx.store.deadLetter(leaseOf(c!), { reason: 'boom', error: sampleError(1), now: at(12) });
      expect(await ctx.store.getBatch(batch.id)).toMatchObject({ completed: 2, dead: 1, cancelled: 0, pending: 1 });
      expect(await callbacks()).toEqual([]);
      await ctx.store.cancelJob(d!.id, { now: at(13) }); // running: requested, ended by its holder
      await ctx.store.completeCancel(leaseOf(d!), at(14));
      const done = await ctx.store.getBatch(batch.id);
      expect(done).toMatchObject({ total: 4, completed: 2, dead: 1, cancelled: 1, pending: 0, finishedAt: at(14) });
      const enqueued = await callbacks();
      expect(enqueued.map((j) => j.name).sort()).toEqual(['on-complete', 'on-failure']);
      for (const job of enqueued) {
        const on = job.name === 'on-complete' ? 'complete' : 'failure';
        expect(job).toMatchObject({
          status: 'queued',
          payload: { cb: on },
          batchCallback: { batchId: batch.id, on },
          idempotencyKey: `batch:${batch.id}:${on}`,
        });
        expect(job.batchId).toBeUndefined();
      }
      expect((await ctx.store.batchFailures(batch.id)).sort()).toEqual([c!.id, d!.id].sort());
    });

    it('all completed (also by completeMany): complete and success run, not failure', async () => {
      const batch = await create(3);
      const jobs = await claimAll(3);
      expect(
        await ctx.store.completeMany(
          jobs.map((j) => ({ lease: leaseOf(j), result: j.id })),
          at(10),
        ),
      ).toEqual(['completed', 'completed', 'completed']);
      expect(await ctx.store.getBatch(batch.id)).toMatchObject({ completed: 3, pending: 0, finishedAt: at(10) });
      expect((await callbacks()).map((j) => j.name).sort()).toEqual(['on-complete', 'on-success']);
      expect(await ctx.store.batchFailures(batch.id)).toEqual([]);
    });

    it('members cancelled while queued count as cancelled; a batch without callbacks just finishes', async () => {
      const batch = await create(2, {});
      for (const id of batch.jobIds) expect(await ctx.store.cancelJob(id, { now: at(5) })).toMatchObject({ outcome: 'cancelled' });
      expect(await ctx.store.getBatch(batch.id)).toMatchObject({ cancelled: 2, pending: 0, finishedAt: at(5) });
      expect(await callbacks()).toEqual([]);
    });

    it('a batch without members finishes when created, with its callbacks', async () => {
      const batch = await create(0);
      expect(await ctx.store.getBatch(batch.id)).toMatchObject({ total: 0, pending: 0, finishedAt: at(0) });
      expect((await callbacks()).map((j) => j.name).sort()).toEqual(['on-complete', 'on-success']);
    });

    it('a retry or a lost lease does not end a member; a dead member replayed before the end is pending again', async () => {
      const batch = await create(2);
      const [a, b] = await claimAll(2);
      await ctx.store.retry(leaseOf(a!), { runAt: at(5), error: sampleError(1), now: at(2) });
      await ctx.store.deadLetter(leaseOf(b!), { reason: 'boom', now: at(3) });
      expect(await ctx.store.getBatch(batch.id)).toMatchObject({ completed: 0, dead: 1, pending: 1 });
      expect(await ctx.store.replayDeadLetter(b!.id, at(4))).toBe(b!.id);
      expect(await ctx.store.getBatch(batch.id)).toMatchObject({ dead: 0, pending: 2 });
      expect(await ctx.store.batchFailures(batch.id)).toEqual([]);
      const again = await claimAll(2, at(6));
      // A stale lease changes nothing.
      await expect(ctx.store.complete(leaseOf(a!), { now: at(7) })).rejects.toMatchObject({ code: 'LEASE_LOST' });
      expect(await ctx.store.getBatch(batch.id)).toMatchObject({ pending: 2 });
      for (const job of again) await ctx.store.complete(leaseOf(job), { now: at(8) });
      expect(await ctx.store.getBatch(batch.id)).toMatchObject({ completed: 2, dead: 0, pending: 0, finishedAt: at(8) });
      expect((await callbacks()).map((j) => j.name).sort()).toEqual(['on-complete', 'on-success']);
    });

    it('after the end the counts are frozen: a member retried then is not counted again, no callback is enqueued twice', async () => {
      const batch = await create(1);
      const [a] = await claimAll(1);
      await ctx.store.deadLetter(leaseOf(a!), { reason: 'boom', now: at(3) });
      const finished = await ctx.store.getBatch(batch.id);
      expect(finished).toMatchObject({ dead: 1, pending: 0, finishedAt: at(3) });
      expect(await ctx.store.retryJob(a!.id, at(4))).toMatchObject({ outcome: 'retried' });
      const [again] = await claimAll(1, at(5));
      await ctx.store.complete(leaseOf(again!), { now: at(6) });
      expect(await ctx.store.getBatch(batch.id)).toEqual(finished);
      expect((await callbacks()).map((j) => j.name).sort()).toEqual(['on-complete', 'on-failure']);
    });

    it(
      'members ending at once: every end counted, the callbacks enqueued exactly once',
      async () => {
        const n = 12;
        const batch = await create(n);
        const jobs = await claimAll(n);
        const peer = await ctx.peer();
        await Promise.all(
          jobs.map((job, i) =>
            i % 3 === 0
              ? peer.deadLetter(leaseOf(job), { reason: 'boom', now: at(10) })
              : (i % 2 === 0 ? ctx.store : peer).complete(leaseOf(job), { result: i, now: at(10) }),
          ),
        );
        expect(await ctx.store.getBatch(batch.id)).toMatchObject({ total: n, completed: 8, dead: 4, pending: 0, finishedAt: at(10) });
        expect((await callbacks()).map((j) => j.name).sort()).toEqual(['on-complete', 'on-failure']);
        expect(await ctx.store.batchFailures(batch.id)).toHaveLength(4);
      },
      HEAVY_TEST_MS,
    );

    it(
      'completeMany of many members from two stores at once: each item its own outcome, every end counted once',
      async () => {
        // More members than a store may spread its counts over (MongoStore: 32 stripes), completed
        // by group commits of two stores at once. In one of them some items cannot complete: a
        // cancel was requested, or the token is not the lease's.
        const n = 40;
        const batch = await create(n);
        const jobs = await claimAll(n);
        const peer = await ctx.peer();
        const cancelling = jobs.slice(0, 3);
        for (const job of cancelling) expect(await ctx.store.cancelJob(job.id, { now: at(5) })).toMatchObject({ outcome: 'requested' });
        const stale = jobs[3]!;
        const mine = jobs.slice(3, 20);
        const theirs = jobs.slice(20);
        const [own, other] = await Promise.all([
          ctx.store.completeMany(
            [...cancelling, ...mine].map((job) => ({ lease: job === stale ? { jobId: job.id, token: 'not-the-lease' } : leaseOf(job), result: job.id })),
            at(10),
          ),
          peer.completeMany(
            theirs.map((job) => ({ lease: leaseOf(job) })),
            at(10),
          ),
        ]);
        expect(own).toEqual([...cancelling.map(() => 'cancelled'), 'lost', ...mine.slice(1).map(() => 'completed')]);
        expect(other).toEqual(theirs.map(() => 'completed'));
        expect(await ctx.store.getBatch(batch.id)).toMatchObject({ completed: n - 4, cancelled: 0, pending: 4 });
        expect(await callbacks()).toEqual([]);
        for (const job of cancelling) await ctx.store.completeCancel(leaseOf(job), at(11));
        expect(await ctx.store.completeMany([{ lease: leaseOf(stale) }], at(12))).toEqual(['completed']);
        const finished = await ctx.store.getBatch(batch.id);
        expect(finished).toMatchObject({ total: n, completed: n - 3, cancelled: 3, pending: 0, finishedAt: at(12) });
        expect((await callbacks()).map((j) => j.name).sort()).toEqual(['on-complete', 'on-failure']);
        // Cancelled members run again after the end and completed together change nothing of it.
        for (const job of cancelling.slice(0, 2)) expect(await ctx.store.retryJob(job.id, at(13))).toMatchObject({ outcome: 'retried' });
        const again = await claimAll(2, at(14));
        expect(
          await ctx.store.completeMany(
            again.map((job) => ({ lease: leaseOf(job) })),
            at(15),
          ),
        ).toEqual(['completed', 'completed']);
        expect(await ctx.store.getBatch(batch.id)).toEqual(finished);
        expect(await callbacks()).toHaveLength(2);
      },
      HEAVY_TEST_MS,
    );

    it(
      'many members ending at once, some dead and replayed meanwhile: the batch ends once, when the last one ends',
      async () => {
        // More members than a store may spread its counts over (MongoStore: 32 stripes), so ends
        // share counters, and a replay takes an end back from a counter others are moving.
        const n = 70;
        const batch = await create(n);
        const jobs = await claimAll(n);
        const peer = await ctx.peer();
        const dead = jobs.filter((_, i) => i % 10 === 0);
        // One member stays running until the end, so nothing below may finish the batch before it.
        const [last, ...rest] = jobs.filter((_, i) => i % 10 !== 0);
        const by = (i: number): JobStore => (i % 2 === 0 ? ctx.store : peer);
        await Promise.all([
          ...rest.map((job, i) => by(i).complete(leaseOf(job), { result: i, now: at(10) })),
          ...dead.map((job, i) => by(i).deadLetter(leaseOf(job), { reason: 'boom', now: at(10) })),
        ]);
        expect(await ctx.store.getBatch(batch.id)).toMatchObject({ total: n, completed: rest.length, dead: dead.length, pending: 1 });
        // Replayed at once: each takes its end back, from counters that had every member ended.
        await Promise.all(dead.map((job, i) => by(i).replayDeadLetter(job.id, at(11))));
        expect(await ctx.store.getBatch(batch.id)).toMatchObject({ completed: rest.length, dead: 0, pending: dead.length + 1 });
        const again = await claimAll(dead.length, at(12));
        await Promise.all(again.map((job, i) => by(i).complete(leaseOf(job), { now: at(13) })));
        const waiting = await ctx.store.getBatch(batch.id);
        expect(waiting).toMatchObject({ completed: n - 1, pending: 1 });
        expect(waiting?.finishedAt).toBeUndefined();
        expect(await callbacks()).toEqual([]);
        await ctx.store.complete(leaseOf(last!), { now: at(14) });
        expect(await ctx.store.getBatch(batch.id)).toMatchObject({ total: n, completed: n, dead: 0, pending: 0, finishedAt: at(14) });
        expect((await callbacks()).map((j) => j.name).sort()).toEqual(['on-complete', 'on-success']);
      },
      HEAVY_TEST_MS,
    );
  });
}
