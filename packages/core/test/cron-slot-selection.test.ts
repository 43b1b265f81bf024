import { describe, expect, it } from '@jest/globals';
import { compileSchedule } from '../src/cron/schedule-options.js';
import { MAX_CATCH_UP_SLOTS, selectSlots } from '../src/cron/slot-selection.js';

const at = (iso: string) => new Date(iso);
const schedule = (cron: string, catchUp: 'latest' | 'all' | 'none') => compileSchedule('Report', { cron, catchUp });
const T0 = at('2026-01-01T10:00:00Z');

describe('selectSlots', () => {
  it('never treats slots before the schedule was first seen as missed', () => {
    const selection = selectSlots(schedule('* * * * *', 'all'), { lastFireAt: null, firstSeenAt: at('2026-01-01T10:00:30Z') }, at('2026-01-01T10:00:59Z'));
    expect(selection).toEqual({ fire: [], advanceTo: null, missed: null });
    expect(selectSlots(schedule('* * * * *', 'all'), { lastFireAt: null, firstSeenAt: at('2026-01-01T10:00:30Z') }, at('2026-01-01T10:01:00Z')).fire).toEqual([
      at('2026-01-01T10:01:00Z'),
    ]);
  });

  it('has nothing due when the clock is at or behind lastFireAt (a clock moved backwards)', () => {
    const cursor = { lastFireAt: at('2026-01-01T10:05:00Z'), firstSeenAt: T0 };
    for (const now of ['2026-01-01T10:05:00Z', '2026-01-01T10:01:00Z', '2025-12-31T10:00:00Z']) {
      expect(selectSlots(schedule('* * * * *', 'all'), cursor, at(now))).toEqual({ fire: [], advanceTo: null, missed: null });
    }
  });

  const afterDowntime = { lastFireAt: T0, firstSeenAt: T0 };
  const threeHoursLater = at('2026-01-01T13:00:30Z');

  it("catchUp 'latest' fires the newest missed slot only and reports the rest", () => {
    expect(selectSlots(schedule('*/5 * * * *', 'latest'), afterDowntime, threeHoursLater)).toEqual({
      fire: [at('2026-01-01T13:00:00Z')],
      advanceTo: at('2026-01-01T13:00:00Z'),
      missed: { after: T0, upTo: at('2026-01-01T12:55:00Z'), reason: 'catch-up-latest' },
    });
  });

  it("catchUp 'all' fires every missed slot, oldest first", () => {
    const selection = selectSlots(schedule('*/5 * * * *', 'all'), afterDowntime, threeHoursLater);
    expect(selection.fire).toHaveLength(36);
    expect(selection.fire[0]).toEqual(at('2026-01-01T10:05:00Z'));
    expect(selection.fire[35]).toEqual(at('2026-01-01T13:00:00Z'));
    expect(selection).toMatchObject({ advanceTo: at('2026-01-01T13:00:00Z'), missed: null });
  });

  it(`catchUp 'all' keeps the newest ${MAX_CATCH_UP_SLOTS} slots and reports the dropped ones`, () => {
    const selection = selectSlots(schedule('* * * * *', 'all'), afterDowntime, threeHoursLater);
    expect(selection.fire).toHaveLength(MAX_CATCH_UP_SLOTS);
    expect(selection.fire[0]).toEqual(at('2026-01-01T11:21:00Z'));
    expect(selection.fire.at(-1)).toEqual(at('2026-01-01T13:00:00Z'));
    expect(selection.missed).toEqual({ after: T0, upTo: at('2026-01-01T11:20:00Z'), reason: 'catch-up-all-limit' });
  });

  it("catchUp 'none' fires only a slot that is less than a minute late", () => {
    expect(selectSlots(schedule('*/5 * * * *', 'none'), afterDowntime, threeHoursLater)).toEqual({
      fire: [at('2026-01-01T13:00:00Z')],
      advanceTo: at('2026-01-01T13:00:00Z'),
      missed: { after: T0, upTo: at('2026-01-01T12:55:00Z'), reason: 'catch-up-none' },
    });
    expect(selectSlots(schedule('*/5 * * * *', 'none'), afterDowntime, at('2026-01-01T13:02:00Z'))).toEqual({
      fire: [],
      advanceTo: at('2026-01-01T13:00:00Z'),
      missed: { after: T0, upTo: at('2026-01-01T13:00:00Z'), reason: 'catch-up-none' },
    });
  });

  it('fires the one due slot of an on-time tick with no missed report, whatever the policy', () => {
    for (const policy of ['latest', 'all', 'none'] as const) {
      expect(selectSlots(schedule('*/5 * * * *', policy), afterDowntime, at('2026-01-01T10:05:00Z'))).toEqual({
        fire: [at('2026-01-01T10:05:00Z')],
        advanceTo: at('2026-01-01T10:05:00Z'),
        missed: null,
      });
    }
  });
});
