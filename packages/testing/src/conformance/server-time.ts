/// <reference types="jest" />
import { enqueueOne, type ConformanceContext } from './harness.js';

/** How far a database's clock may be from the test process's and still count as "now". */
const SAME_DAY_MS = 24 * 3_600_000;

export function describeServerTime(ctx: ConformanceContext): void {
  describe('serverTime (optional: stores in the engine process omit it)', () => {
    // The one conformance test that reads the wall clock: the operation is about clocks. The bound
    // is wide (a day) so a database on another machine passes; a store answering with a `now` it
    // was given (the suite's fixed reference instant) or a cached reading would not.
    it("reads the database's clock on each call: a valid Date, near the real time", async () => {
      const read = ctx.store.serverTime?.bind(ctx.store);
      if (read === undefined) return;
      await enqueueOne(ctx.store); // the suite's fixed `now`, which serverTime must not echo
      const first = await read();
      expect(first).toBeInstanceOf(Date);
      expect(Number.isNaN(first.getTime())).toBe(false);
      expect(Math.abs(first.getTime() - Date.now())).toBeLessThan(SAME_DAY_MS);
      first.setTime(0); // the caller owns the Date it got
      const second = await read();
      expect(Math.abs(second.getTime() - Date.now())).toBeLessThan(SAME_DAY_MS);
    });
  });
}
