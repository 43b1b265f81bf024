/// <reference types="jest" />
import { LoomError, type JobStore, type QueueSeriesBucket } from '@loom/core';
import { at, claimOne, enqueueAndClaim, enqueueOne, type ConformanceContext } from './harness.js';

const MIN = 60_000;

function bucket(start: number, counts: Partial<Omit<QueueSeriesBucket, 'start'>>): QueueSeriesBucket {
  return { start: at(start), completed: 0, failed: 0, dead: 0, started: 0, waitMs: 0, depth: null, ...counts };
}

/** The runs of the first two cases: queue `default` in buckets 0, 5 and 60 min; one job in `other`. */
async function runSome(store: JobStore): Promise<void> {
  // Due at 0, claimed at 2 min (waited 2 min), completed at 3 min.
  const a = await enqueueAndClaim(store, {}, { now: at(2 * MIN) });
  await store.complete(a.lease, { now: at(3 * MIN) });
  // Another queue's run is not counted under `default`.
  const other = await enqueueAndClaim(store, { queue: 'other' }, { now: at(2 * MIN) });
  await store.complete(other.lease, { now: at(3 * MIN) });
  // Due at 0, claimed at 6 min (waited 6), retried at 7 for 8 min, claimed at 9 (waited 1), dead at 9.5.
  const b = await enqueueAndClaim(store, {}, { now: at(6 * MIN) });
  await store.retry(b.lease, { runAt: at(8 * MIN), error: { attempt: 1, at: at(7 * MIN), name: 'Error', message: 'boom' }, now: at(7 * MIN) });
  const again = await claimOne(store, { now: at(9 * MIN) });
  await store.deadLetter(again.lease, { reason: 'boom', now: at(9.5 * MIN) });
  // Due at 60 min, claimed at 61 (waited 1), completed in a batch at 62.
  const d = await enqueueAndClaim(store, { runAt: at(60 * MIN) }, { now: at(61 * MIN) });
  expect(await store.completeMany([{ lease: d.lease, result: 1 }], at(62 * MIN))).toEqual(['completed']);
}

export function describeQueueSeries(ctx: ConformanceContext): void {
  describe('queueSeries (optional)', () => {
    it('counts starts, waits, completions, failed attempts and deaths per queue, in 5-minute and hourly buckets', async () => {
      const series = ctx.store.queueSeries?.bind(ctx.store);
      if (series === undefined) return;
      await runSome(ctx.store);
      expect(await series({ queue: 'default', resolution: '5m', from: at(0), to: at(120 * MIN) })).toEqual([
        bucket(0, { started: 1, waitMs: 2 * MIN, completed: 1 }),
        bucket(5 * MIN, { started: 2, waitMs: 7 * MIN, failed: 2, dead: 1 }),
        bucket(60 * MIN, { started: 1, waitMs: 1 * MIN, completed: 1 }),
      ]);
      expect(await series({ queue: 'default', resolution: '1h', from: at(0), to: at(120 * MIN) })).toEqual([
        bucket(0, { started: 3, waitMs: 9 * MIN, completed: 1, failed: 2, dead: 1 }),
        bucket(60 * MIN, { started: 1, waitMs: 1 * MIN, completed: 1 }),
      ]);
      expect(await series({ queue: 'other', resolution: '5m', from: at(0), to: at(120 * MIN) })).toEqual([
        bucket(0, { started: 1, waitMs: 2 * MIN, completed: 1 }),
      ]);
      expect(await series({ queue: 'nobody', resolution: '1h', from: at(0), to: at(120 * MIN) })).toEqual([]);
    });

    it('reads the buckets starting in [from, to)', async () => {
      const series = ctx.store.queueSeries?.bind(ctx.store);
      if (series === undefined) return;
      await runSome(ctx.store);
      const starts = async (from: number, to: number) =>
        (await series({ queue: 'default', resolution: '5m', from: at(from), to: at(to) })).map((b) => b.start.getTime() - at(0).getTime());
      expect(await starts(5 * MIN, 60 * MIN)).toEqual([5 * MIN]);
      expect(await starts(1, 60 * MIN + 1)).toEqual([5 * MIN, 60 * MIN]);
      expect(await starts(10 * MIN, 60 * MIN)).toEqual([]);
    });

    it('keeps the largest queued count listQueues(now) saw in a bucket as its depth', async () => {
      const series = ctx.store.queueSeries?.bind(ctx.store);
      if (series === undefined) return;
      for (let i = 0; i < 3; i++) await enqueueOne(ctx.store, {}, at(MIN));
      await ctx.store.listQueues(at(2 * MIN));
      await claimOne(ctx.store, { now: at(3 * MIN) });
      await ctx.store.listQueues(at(4 * MIN));
      await ctx.store.listQueues(at(6 * MIN));
      await ctx.store.listQueues(); // no instant: no sample
      expect(await series({ queue: 'default', resolution: '5m', from: at(0), to: at(10 * MIN) })).toEqual([
        bucket(0, { depth: 3, started: 1, waitMs: 3 * MIN }),
        bucket(5 * MIN, { depth: 2 }),
      ]);
      expect((await series({ queue: 'default', resolution: '1h', from: at(0), to: at(10 * MIN) }))[0]!.depth).toBe(3);
    });

    it('deletes buckets past their retention (5-minute ones after 25 hours, hourly ones after 8 days) as later runs are counted', async () => {
      const series = ctx.store.queueSeries?.bind(ctx.store);
      if (series === undefined) return;
      await runSome(ctx.store);
      const HOUR = 60 * MIN;
      await enqueueAndClaim(ctx.store, { runAt: at(27 * HOUR) }, { now: at(27 * HOUR) });
      const fiveMinute = await series({ queue: 'default', resolution: '5m', from: at(0), to: at(30 * HOUR) });
      expect(fiveMinute.map((b) => b.start)).toEqual([at(27 * HOUR)]);
      const hourly = await series({ queue: 'default', resolution: '1h', from: at(0), to: at(30 * HOUR) });
      expect(hourly.map((b) => b.start)).toEqual([at(0), at(HOUR), at(27 * HOUR)]);
    });

    it('refuses an unknown resolution or a missing bound, reading nothing', async () => {
      const series = ctx.store.queueSeries?.bind(ctx.store);
      if (series === undefined) return;
      for (const bad of [
        { queue: 'default', resolution: '1m' as '5m', from: at(0), to: at(1) },
        { queue: 'default', resolution: '5m' as const, from: at(0), to: undefined as unknown as Date },
        { queue: '', resolution: '1h' as const, from: at(0), to: at(1) },
      ]) {
        const error = await series(bad).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(LoomError.is(error, 'INVALID_ARGUMENT')).toBe(true);
      }
    });
  });
}
