/// <reference types="jest" />
import { at, enqueueAndClaim, enqueueOne, type ConformanceContext } from './harness.js';

export function describeNextClaimable(ctx: ConformanceContext): void {
  describe('nextClaimableAt (optional)', () => {
    it('is the earliest instant after now at which a job becomes claimable: a delayed runAt, a lease expiry, a wait timeout', async () => {
      const next = ctx.store.nextClaimableAt?.bind(ctx.store);
      if (next === undefined) return;
      expect(await next(at(0))).toBeNull();

      // Due now: claimable already, so it becomes claimable at no instant after now.
      await enqueueOne(ctx.store, { name: 'due' }, at(0));
      expect(await next(at(0))).toBeNull();
      await enqueueOne(ctx.store, { name: 'delayed', runAt: at(5_000) }, at(0));
      expect(await next(at(0))).toEqual(at(5_000));
      expect(await next(at(4_999))).toEqual(at(5_000));
      expect(await next(at(5_000))).toBeNull();

      // A running job: claimable again the millisecond after its lease ends.
      const running = await enqueueAndClaim(ctx.store, { name: 'run' }, { names: ['run'], now: at(10), leaseMs: 1_000 });
      expect(await next(at(10))).toEqual(at(1_011));
      expect(await next(at(1_011))).toEqual(at(5_000));

      // A waiting job with a timeout: claimable at the timeout; one without never by time.
      const waiting = await enqueueAndClaim(ctx.store, { name: 'wait' }, { names: ['wait'], now: at(20) });
      await ctx.store.wait(waiting.lease, { for: { signal: 'go' }, timeoutAt: at(800), now: at(30) });
      const forever = await enqueueAndClaim(ctx.store, { name: 'wait-long' }, { names: ['wait-long'], now: at(20) });
      await ctx.store.wait(forever.lease, { for: { signal: 'go' }, now: at(30) });
      expect(await next(at(30))).toEqual(at(800));

      // A finished job no longer counts.
      await ctx.store.complete(running.lease, { now: at(40) });
      expect(await next(at(800))).toEqual(at(5_000));
      expect(await next(at(5_000))).toBeNull();
    });
  });
}
