/// <reference types="jest" />
import { at, type ConformanceContext } from './harness.js';

export function describeSchedules(ctx: ConformanceContext): void {
  describe('schedules', () => {
    it('ensureSchedule creates a schedule once and then returns it unchanged', async () => {
      const created = await ctx.store.ensureSchedule('nightly', at(100));
      expect(created).toEqual({ name: 'nightly', lastFireAt: null, firstSeenAt: at(100), firing: [], paused: false, updatedAt: at(100) });
      expect(await ctx.store.ensureSchedule('nightly', at(200))).toEqual(created);
      expect(await ctx.store.listSchedules()).toEqual([created]);
    });

    it('advanceSchedule is a compare-and-set on lastFireAt', async () => {
      await ctx.store.ensureSchedule('nightly', at(0));
      expect(await ctx.store.advanceSchedule('nightly', null, at(1_000), at(1_001))).toBe(true);
      expect(await ctx.store.advanceSchedule('nightly', null, at(2_000), at(2_001))).toBe(false);
      expect(await ctx.store.advanceSchedule('nightly', at(999), at(2_000), at(2_001))).toBe(false);
      expect(await ctx.store.advanceSchedule('nightly', at(1_000), at(2_000), at(2_001))).toBe(true);
      const [schedule] = await ctx.store.listSchedules();
      expect(schedule).toMatchObject({ name: 'nightly', lastFireAt: at(2_000), firstSeenAt: at(0), updatedAt: at(2_001) });
      expect(schedule.lastFireAt).toBeInstanceOf(Date);
    });

    it('lets exactly one of many concurrent advances with the same expected value win', async () => {
      await ctx.store.ensureSchedule('hourly', at(0));
      const wins = await Promise.all(Array.from({ length: 8 }, (_, i) => ctx.store.advanceSchedule('hourly', null, at(3_600_000 + i), at(3_600_000))));
      expect(wins.filter(Boolean)).toHaveLength(1);
      const winner = wins.indexOf(true);
      expect((await ctx.store.ensureSchedule('hourly', at(1))).lastFireAt).toEqual(at(3_600_000 + winner));
    });

    it('advanceSchedule records the slots to fire in the same write; markScheduleFired clears them only for that advance', async () => {
      await ctx.store.ensureSchedule('report', at(0));
      expect(await ctx.store.advanceSchedule('report', null, at(2_000), at(2_001), [at(1_000), at(2_000)])).toBe(true);
      expect(await ctx.store.ensureSchedule('report', at(2_002))).toMatchObject({
        lastFireAt: at(2_000),
        firing: [at(1_000), at(2_000)],
        updatedAt: at(2_001),
      });
      // A losing advance changes nothing, firing included.
      expect(await ctx.store.advanceSchedule('report', null, at(3_000), at(3_001), [at(3_000)])).toBe(false);
      expect((await ctx.store.ensureSchedule('report', at(3_002))).firing).toEqual([at(1_000), at(2_000)]);
      // Cleared only while lastFireAt is still the advance's slot.
      expect(await ctx.store.markScheduleFired('report', at(1_000), at(3_003))).toBe(false);
      expect(await ctx.store.markScheduleFired('report', at(2_000), at(3_004))).toBe(true);
      expect(await ctx.store.ensureSchedule('report', at(3_005))).toMatchObject({ lastFireAt: at(2_000), firing: [], updatedAt: at(3_004) });

      expect(await ctx.store.advanceSchedule('report', at(2_000), at(4_000), at(4_001), [at(4_000)])).toBe(true);
      expect(await ctx.store.markScheduleFired('report', at(2_000), at(4_002))).toBe(false); // a late clear of the earlier advance
      expect((await ctx.store.ensureSchedule('report', at(4_003))).firing).toEqual([at(4_000)]);
      // Without a fire list an advance leaves firing alone.
      expect(await ctx.store.advanceSchedule('report', at(4_000), at(5_000), at(5_001))).toBe(true);
      expect(await ctx.store.ensureSchedule('report', at(5_002))).toMatchObject({ lastFireAt: at(5_000), firing: [at(4_000)] });
      expect(await ctx.store.markScheduleFired('ghost', at(5_000), at(5_003))).toBe(false);
    });

    it('advanceSchedule and setSchedulePaused return false for an unknown schedule', async () => {
      expect(await ctx.store.advanceSchedule('ghost', null, at(1), at(1))).toBe(false);
      expect(await ctx.store.setSchedulePaused('ghost', true, at(1))).toBe(false);
      expect(await ctx.store.listSchedules()).toEqual([]);
    });

    it('pauses and resumes a schedule', async () => {
      await ctx.store.ensureSchedule('a', at(0));
      await ctx.store.ensureSchedule('b', at(0));
      expect(await ctx.store.setSchedulePaused('a', true, at(5))).toBe(true);
      expect((await ctx.store.ensureSchedule('a', at(6))).paused).toBe(true);
      const listed = await ctx.store.listSchedules();
      expect(listed.map((s) => [s.name, s.paused]).sort()).toEqual([
        ['a', true],
        ['b', false],
      ]);
      expect(await ctx.store.setSchedulePaused('a', false, at(7))).toBe(true);
      expect(await ctx.store.ensureSchedule('a', at(8))).toMatchObject({ paused: false, updatedAt: at(7) });
    });
  });
}
