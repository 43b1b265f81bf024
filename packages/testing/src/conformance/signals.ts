/// <reference types="jest" />
import { LoomError, MAX_PENDING_SIGNALS } from '@loom/core';
import { at, claimJobs, HEAVY_TEST_MS, claimOne, enqueueAndClaim, enqueueOne, idsOf, mustGet, type ConformanceContext } from './harness.js';

export function describeSignals(ctx: ConformanceContext): void {
  describe('wait, signal, wake and consumeSignal', () => {
    it('a signal that arrived before the wait: wait says signal-pending and changes nothing; consumed once', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      expect(await ctx.store.signal(id, { name: 'approve', data: { by: 'ann' }, now: at(10) })).toBe(true);
      const before = await mustGet(ctx.store, id);
      expect(before.signals).toEqual([{ name: 'approve', data: { by: 'ann' }, at: at(10) }]);
      expect(await ctx.store.wait(lease, { for: { signal: 'approve' }, timeoutAt: at(60_000), now: at(20) })).toBe('signal-pending');
      expect(await mustGet(ctx.store, id)).toEqual(before);

      const step = await ctx.store.consumeSignal(lease, { signal: 'approve', stepName: 'approval', now: at(30) });
      expect(step).toMatchObject({ name: 'approval', status: 'completed', result: { by: 'ann' } });
      const after = await mustGet(ctx.store, id);
      expect(after.signals).toEqual([]);
      expect(after.steps).toEqual([step]);
      expect(await ctx.store.consumeSignal(lease, { signal: 'approve', stepName: 'approval-2', now: at(40) })).toBeNull();
      expect((await mustGet(ctx.store, id)).steps).toEqual([step]);
    });

    it('a signal during the wait queues the job at now; the next run consumes it', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const pending = { name: 'approval', kind: 'wait' as const, status: 'pending' as const, at: at(5) };
      expect(await ctx.store.wait(lease, { for: { signal: 'approve' }, step: pending, now: at(5) })).toBe('waiting');
      const waiting = await mustGet(ctx.store, id);
      expect(waiting).toMatchObject({ status: 'waiting', attempt: 0, waitingFor: { signal: 'approve' }, steps: [pending] });
      expect(waiting.lease).toBeUndefined();
      expect(await claimJobs(ctx.store, { now: at(10_000_000) })).toEqual([]);

      expect(await ctx.store.signal(id, { name: 'approve', data: 42, now: at(1_000) })).toBe(true);
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'queued', runAt: at(1_000) });
      const { job, lease: second } = await claimOne(ctx.store, { now: at(1_000) });
      expect(job).toMatchObject({ id, attempt: 1 });
      const step = await ctx.store.consumeSignal(second, { signal: 'approve', stepName: 'approval', now: at(1_001) });
      expect(step).toMatchObject({ name: 'approval', status: 'completed', result: 42 });
      expect((await mustGet(ctx.store, id)).steps).toEqual([step]);
    });

    it('never loses a signal that races the wait', async () => {
      for (let round = 0; round < 5; round++) {
        const { id, lease } = await enqueueAndClaim(ctx.store, { name: `race-${round}` }, { now: at(round) });
        const waiting = ctx.store.wait(lease, { for: { signal: 'go' }, now: at(round + 1) });
        const [waited, delivered] = await Promise.all([waiting, ctx.store.signal(id, { name: 'go', data: round, now: at(round + 1) })]);
        expect(delivered).toBe(true);
        const job = await mustGet(ctx.store, id);
        // Either the wait saw the signal (still running), or the signal woke the parked job.
        expect(job.status).toBe(waited === 'signal-pending' ? 'running' : 'queued');
        expect(job.signals).toMatchObject([{ name: 'go', data: round }]);
      }
    });

    it('consumes the oldest signal of that name first; other names stay', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      await ctx.store.signal(id, { name: 'item', data: 1, now: at(1) });
      await ctx.store.signal(id, { name: 'other', data: 'x', now: at(2) });
      await ctx.store.signal(id, { name: 'item', data: 2, now: at(3) });
      expect((await ctx.store.consumeSignal(lease, { signal: 'item', stepName: 'first', now: at(4) }))?.result).toBe(1);
      expect((await ctx.store.consumeSignal(lease, { signal: 'item', stepName: 'second', now: at(5) }))?.result).toBe(2);
      expect((await mustGet(ctx.store, id)).signals).toEqual([{ name: 'other', data: 'x', at: at(2) }]);
    });

    it('a signal of another name is stored but does not wake the job', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      await ctx.store.wait(lease, { for: { signal: 'approve' }, now: at(5) });
      expect(await ctx.store.signal(id, { name: 'cancel', data: null, now: at(6) })).toBe(true);
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'waiting', signals: [{ name: 'cancel', data: null, at: at(6) }] });
    });

    it('a signal with an id is stored once: again while stored, or after a run took it, stores nothing and returns true', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      const sends = await Promise.all(Array.from({ length: 4 }, (_, i) => ctx.store.signal(id, { name: 'paid', data: i, id: 'evt-1', now: at(1) })));
      expect(sends).toEqual([true, true, true, true]);
      const stored = (await mustGet(ctx.store, id)).signals;
      expect(stored).toHaveLength(1);
      expect(stored[0]).toMatchObject({ name: 'paid', id: 'evt-1', at: at(1) });

      const step = await ctx.store.consumeSignal(lease, { signal: 'paid', stepName: 'payment', now: at(2) });
      expect(step).toMatchObject({ name: 'payment', status: 'completed', signalId: 'evt-1' });
      expect(await ctx.store.signal(id, { name: 'paid', data: 'again', id: 'evt-1', now: at(3) })).toBe(true);
      expect((await mustGet(ctx.store, id)).signals).toEqual([]);
      // Another id, or none, is a new signal.
      expect(await ctx.store.signal(id, { name: 'paid', data: 'second', id: 'evt-2', now: at(4) })).toBe(true);
      expect(await ctx.store.signal(id, { name: 'paid', data: 'third', now: at(5) })).toBe(true);
      expect((await mustGet(ctx.store, id)).signals.map((s) => s.data)).toEqual(['second', 'third']);
    });

    it(
      `refuses a signal past MAX_PENDING_SIGNALS (${MAX_PENDING_SIGNALS}) with TOO_MANY_SIGNALS and stores nothing`,
      async () => {
        const { id, lease } = await enqueueAndClaim(ctx.store);
        for (let i = 0; i < MAX_PENDING_SIGNALS - 1; i++) await ctx.store.signal(id, { name: 'tick', data: i, now: at(i) });
        await ctx.store.wait(lease, { for: { signal: 'go' }, now: at(200) });
        expect(await ctx.store.signal(id, { name: 'tick', data: 'last that fits', now: at(201) })).toBe(true);
        const full = await mustGet(ctx.store, id);
        expect(full.signals).toHaveLength(MAX_PENDING_SIGNALS);
        // Refused whatever the name, even the one the job waits for; a duplicate id is still just a duplicate.
        for (const name of ['tick', 'go']) {
          const refused = await ctx.store.signal(id, { name, data: 'too many', now: at(202) }).catch((err: unknown) => err);
          expect(refused).toMatchObject({ code: 'TOO_MANY_SIGNALS' });
          expect(LoomError.is(refused, 'TOO_MANY_SIGNALS')).toBe(true);
        }
        expect(await mustGet(ctx.store, id)).toEqual(full);
        expect(full.status).toBe('waiting');
      },
      HEAVY_TEST_MS,
    );

    it('signal returns false for unknown and finished jobs', async () => {
      expect(await ctx.store.signal('no-such-job', { name: 'x', data: 1, now: at(1) })).toBe(false);
      const { id, lease } = await enqueueAndClaim(ctx.store);
      await ctx.store.complete(lease, { now: at(2) });
      const before = await mustGet(ctx.store, id);
      expect(await ctx.store.signal(id, { name: 'x', data: 1, now: at(3) })).toBe(false);
      expect(await mustGet(ctx.store, id)).toEqual(before);
    });

    it('signal stores on a queued job that has not run yet', async () => {
      const id = await enqueueOne(ctx.store);
      expect(await ctx.store.signal(id, { name: 'early', data: [1], now: at(1) })).toBe(true);
      expect((await mustGet(ctx.store, id)).signals).toEqual([{ name: 'early', data: [1], at: at(1) }]);
    });

    it('wake queues a waiting job at now and returns false otherwise', async () => {
      const child = await enqueueOne(ctx.store, { name: 'child' });
      const { id, lease } = await enqueueAndClaim(ctx.store, { name: 'parent' });
      expect(await ctx.store.wait(lease, { for: { jobs: [child] }, now: at(5) })).toBe('waiting');
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'waiting', waitingFor: { jobs: [child] } });
      expect(await ctx.store.wake(id, at(100))).toBe(true);
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'queued', runAt: at(100) });
      expect(await ctx.store.wake(id, at(101))).toBe(false);
      expect(await ctx.store.wake('no-such-job', at(101))).toBe(false);
      expect(idsOf(await claimJobs(ctx.store, { names: ['parent'], now: at(100) }))).toEqual([id]);
      expect(await ctx.store.wake(id, at(102))).toBe(false);
    });

    it('isWaitingFor says whether a job waits for a given job; findActiveChild finds an unfinished child', async () => {
      const { id: parent, lease } = await enqueueAndClaim(ctx.store, { name: 'parent' });
      const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((n) => enqueueOne(ctx.store, { name: `child-${n}`, parentId: parent }, at(1))));
      const other = await enqueueOne(ctx.store, { name: 'unrelated' }, at(1));
      expect(await ctx.store.isWaitingFor(parent, a)).toBe(false); // running, not waiting
      await ctx.store.wait(lease, { for: { jobs: [a, b, other] }, now: at(2) });
      expect(await ctx.store.isWaitingFor(parent, a)).toBe(true);
      expect(await ctx.store.isWaitingFor(parent, other)).toBe(true);
      expect(await ctx.store.isWaitingFor(parent, c)).toBe(false);
      expect(await ctx.store.isWaitingFor(a, parent)).toBe(false);
      expect(await ctx.store.isWaitingFor('no-such-job', a)).toBe(false);

      const finish = async (name: string, dead = false) => {
        const { lease: l } = await claimOne(ctx.store, { names: [name], now: at(3) });
        if (dead) await ctx.store.deadLetter(l, { reason: 'boom', now: at(4) });
        else await ctx.store.complete(l, { now: at(4) });
      };
      expect([a, b, c]).toContain(await ctx.store.findActiveChild(parent));
      await finish('child-a');
      await finish('child-c', true);
      expect(await ctx.store.findActiveChild(parent)).toBe(b);
      await finish('child-b');
      expect(await ctx.store.findActiveChild(parent)).toBeNull();
      expect(await ctx.store.findActiveChild(other)).toBeNull();
      expect(await ctx.store.findActiveChild('no-such-job')).toBeNull();
      // A woken parent waits for nothing any more.
      await ctx.store.wake(parent, at(5));
      expect(await ctx.store.isWaitingFor(parent, a)).toBe(false);
    });

    it('a waiting job becomes claimable at its timeout', async () => {
      const { id, lease } = await enqueueAndClaim(ctx.store);
      await ctx.store.wait(lease, { for: { signal: 'approve' }, timeoutAt: at(60_000), now: at(5) });
      expect(await mustGet(ctx.store, id)).toMatchObject({ status: 'waiting', runAt: at(60_000) });
      expect(await claimJobs(ctx.store, { now: at(59_999) })).toEqual([]);
      const [timedOut] = await claimJobs(ctx.store, { now: at(60_000) });
      expect(timedOut).toMatchObject({ id, status: 'running', attempt: 1 });
    });
  });
}
