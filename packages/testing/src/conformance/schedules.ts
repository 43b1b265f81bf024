/// <reference types="jest" />
import { at, type ConformanceContext } from './harness.js';

export function describeSchedules(ctx: ConformanceContext): void {
  describe('schedules', () => {
    it('ensureSchedule creates a schedule once and then returns it unchanged', async () => {
      const created = await ctx.store.ensureSchedule('nightly', at(100));
      expect(created).toEqual({ name: 'nightly', lastFireAt: null, firstSeenAt: at(100), paused: false, updatedAt: at(100) });
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
      const wins = await Promise.all(
        Array.from({ length: 8 }, (_, i) => ctx.store.advanceSchedule('hourly', null, at(3_600_000 + i), at(3_600_000))),
      );
      expect(wins.filter(Boolean)).toHaveLength(1);
      const winner = wins.indexOf(true);
      expect((await ctx.store.ensureSchedule('hourly', at(1))).lastFireAt).toEqual(at(3_600_000 + winner));
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
