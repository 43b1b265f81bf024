import { describe, expect, it } from '@jest/globals';
import { DateTime } from 'luxon';
import { FireTimes } from '../src/cron/fire-times.js';

const iso = (d: Date) => d.toISOString();
const local = (d: Date, zone: string) => DateTime.fromJSDate(d, { zone }).toFormat('yyyy-MM-dd HH:mm ZZ');

/** Every fire in [from, to), rendered in the zone. */
function fires(expr: string, zone: string, from: string, to: string): string[] {
  return new FireTimes(expr, zone).between(new Date(Date.parse(from) - 1), new Date(Date.parse(to) - 1)).map((d) => local(d, zone));
}

describe('FireTimes: fire times come from the expression', () => {
  it('lists minutely slots as whole UTC minutes, strictly after the start', () => {
    const ft = new FireTimes('* * * * *', 'UTC');
    expect(iso(ft.next(new Date('2026-01-01T00:00:00Z')))).toBe('2026-01-01T00:01:00.000Z');
    expect(iso(ft.next(new Date('2026-01-01T00:00:59.999Z')))).toBe('2026-01-01T00:01:00.000Z');
    expect(ft.between(new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T00:05:00Z')).map(iso)).toEqual([
      '2026-01-01T00:01:00.000Z',
      '2026-01-01T00:02:00.000Z',
      '2026-01-01T00:03:00.000Z',
      '2026-01-01T00:04:00.000Z',
      '2026-01-01T00:05:00.000Z',
    ]);
  });

  it('reads the expression in the schedule time zone', () => {
    const ft = new FireTimes('0 3 * * *', 'Europe/Berlin');
    expect(iso(ft.next(new Date('2026-01-10T12:00:00Z')))).toBe('2026-01-11T02:00:00.000Z');
    expect(iso(ft.next(new Date('2026-07-10T12:00:00Z')))).toBe('2026-07-11T01:00:00.000Z');
  });

  it('supports six fields with seconds first', () => {
    const ft = new FireTimes('*/20 * * * * *', 'UTC');
    expect(ft.between(new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T00:01:00Z')).map(iso)).toEqual([
      '2026-01-01T00:00:20.000Z',
      '2026-01-01T00:00:40.000Z',
      '2026-01-01T00:01:00.000Z',
    ]);
  });

  it('finds the newest slots of a long downtime without missing or inventing any', () => {
    const ft = new FireTimes('*/5 * * * *', 'UTC');
    const after = new Date('2026-01-01T00:00:00Z');
    const until = new Date('2026-01-08T00:02:00Z');
    const newest = ft.latest(after, until, 3);
    expect(newest).toEqual({
      slots: [new Date('2026-01-07T23:50:00Z'), new Date('2026-01-07T23:55:00Z'), new Date('2026-01-08T00:00:00Z')],
      complete: false,
    });
    const all = ft.latest(after, new Date('2026-01-01T00:12:00Z'), 10);
    expect(all).toEqual({ slots: [new Date('2026-01-01T00:05:00Z'), new Date('2026-01-01T00:10:00Z')], complete: true });
    expect(ft.latest(after, new Date('2026-01-01T00:04:00Z'), 1)).toEqual({ slots: [], complete: true });
  });
});

/**
 * A daily 02:30 job around each DST transition of 2026: exactly one run per local day; a slot in a
 * spring-forward gap runs at the end of the gap; a repeated local time runs once, at its first
 * occurrence.
 */
describe('FireTimes: DST, daily 30 2 * * *', () => {
  const cases: Array<{ zone: string; from: string; to: string; expected: string[] }> = [
    {
      zone: 'Europe/Berlin', // spring forward 2026-03-29 02:00 -> 03:00
      from: '2026-03-27T12:00:00Z',
      to: '2026-03-31T12:00:00Z',
      expected: ['2026-03-28 02:30 +01:00', '2026-03-29 03:00 +02:00', '2026-03-30 02:30 +02:00', '2026-03-31 02:30 +02:00'],
    },
    {
      zone: 'Europe/Berlin', // fall back 2026-10-25 03:00 -> 02:00: 02:30 happens twice
      from: '2026-10-23T12:00:00Z',
      to: '2026-10-27T12:00:00Z',
      expected: ['2026-10-24 02:30 +02:00', '2026-10-25 02:30 +02:00', '2026-10-26 02:30 +01:00', '2026-10-27 02:30 +01:00'],
    },
    {
      zone: 'America/New_York', // spring forward 2026-03-08 02:00 -> 03:00
      from: '2026-03-06T12:00:00Z',
      to: '2026-03-10T12:00:00Z',
      expected: ['2026-03-07 02:30 -05:00', '2026-03-08 03:00 -04:00', '2026-03-09 02:30 -04:00', '2026-03-10 02:30 -04:00'],
    },
    {
      // fall back 2026-11-01 02:00 -> 01:00 (01:xx repeats; 02:30 is unambiguous). cron 4.4.0 alone
      // fires at 01:30 EST and 02:30 EST that day.
      zone: 'America/New_York',
      from: '2026-10-30T12:00:00Z',
      to: '2026-11-03T12:00:00Z',
      expected: ['2026-10-31 02:30 -04:00', '2026-11-01 02:30 -05:00', '2026-11-02 02:30 -05:00', '2026-11-03 02:30 -05:00'],
    },
    {
      // spring forward 2026-10-04 02:00 -> 03:00. cron 4.4.0 alone fires at 03:30 here.
      zone: 'Australia/Sydney',
      from: '2026-10-02T12:00:00Z',
      to: '2026-10-06T12:00:00Z',
      expected: ['2026-10-03 02:30 +10:00', '2026-10-04 03:00 +11:00', '2026-10-05 02:30 +11:00', '2026-10-06 02:30 +11:00'],
    },
    {
      zone: 'Australia/Sydney', // fall back 2026-04-05 03:00 -> 02:00: 02:30 happens twice
      from: '2026-04-03T12:00:00Z',
      to: '2026-04-07T12:00:00Z',
      expected: ['2026-04-04 02:30 +11:00', '2026-04-05 02:30 +11:00', '2026-04-06 02:30 +10:00', '2026-04-07 02:30 +10:00'],
    },
    {
      zone: 'Asia/Kolkata', // no DST: the control
      from: '2026-03-27T12:00:00Z',
      to: '2026-03-31T12:00:00Z',
      expected: ['2026-03-28 02:30 +05:30', '2026-03-29 02:30 +05:30', '2026-03-30 02:30 +05:30', '2026-03-31 02:30 +05:30'],
    },
    {
      zone: 'America/Santiago', // spring forward at midnight 2026-09-06 00:00 -> 01:00: 02:30 unaffected
      from: '2026-09-04T12:00:00Z',
      to: '2026-09-08T12:00:00Z',
      expected: ['2026-09-05 02:30 -04:00', '2026-09-06 02:30 -03:00', '2026-09-07 02:30 -03:00', '2026-09-08 02:30 -03:00'],
    },
    {
      zone: 'America/Santiago', // fall back at midnight 2026-04-05 00:00 -> 2026-04-04 23:00
      from: '2026-04-02T12:00:00Z',
      to: '2026-04-06T12:00:00Z',
      expected: ['2026-04-03 02:30 -03:00', '2026-04-04 02:30 -03:00', '2026-04-05 02:30 -04:00', '2026-04-06 02:30 -04:00'],
    },
  ];

  it.each(cases)('$zone from $from: one run per local day', ({ zone, from, to, expected }) => {
    expect(fires('30 2 * * *', zone, from, to)).toEqual(expected);
  });

  it('America/Santiago: a slot in its midnight gap runs at the end of the gap, a repeated 23:30 once', () => {
    expect(fires('30 0 * * *', 'America/Santiago', '2026-09-04T12:00:00Z', '2026-09-07T12:00:00Z')).toEqual([
      '2026-09-05 00:30 -04:00',
      '2026-09-06 01:00 -03:00',
      '2026-09-07 00:30 -03:00',
    ]);
    expect(fires('30 23 * * *', 'America/Santiago', '2026-04-03T12:00:00Z', '2026-04-06T12:00:00Z')).toEqual([
      '2026-04-03 23:30 -03:00',
      '2026-04-04 23:30 -03:00',
      '2026-04-05 23:30 -04:00',
    ]);
  });

  it('gives the same slots whatever instant an enumeration starts from (inside the repeated hour too)', () => {
    const ft = new FireTimes('30 2 * * *', 'Europe/Berlin');
    // 02:10 CET, the second pass of 02:xx on 2026-10-25: 02:30 already ran at 00:30Z.
    expect(iso(ft.next(new Date('2026-10-25T01:10:00Z')))).toBe('2026-10-26T01:30:00.000Z');
    // inside the spring-forward gap's wall times never happens as a start, but right before it:
    expect(iso(ft.next(new Date('2026-03-29T00:59:59Z')))).toBe('2026-03-29T01:00:00.000Z');
    expect(iso(ft.next(new Date('2026-03-29T01:00:00Z')))).toBe('2026-03-30T00:30:00.000Z');
  });
});

describe('FireTimes: DST, interval-like schedules (hour field *)', () => {
  it('a minutely schedule fires every real minute through spring-forward, with no duplicate', () => {
    const ft = new FireTimes('* * * * *', 'Europe/Berlin');
    const slots = ft.between(new Date('2026-03-29T00:50:00Z'), new Date('2026-03-29T01:10:00Z')).map(iso);
    expect(slots).toHaveLength(20);
    expect(new Set(slots).size).toBe(20);
    expect(slots[0]).toBe('2026-03-29T00:51:00.000Z');
    expect(slots.at(-1)).toBe('2026-03-29T01:10:00.000Z');
  });

  it('a minutely schedule keeps firing through the repeated hour of fall-back', () => {
    const ft = new FireTimes('* * * * *', 'Europe/Berlin');
    const slots = ft.between(new Date('2026-10-25T00:30:00Z'), new Date('2026-10-25T02:30:00Z'));
    expect(slots).toHaveLength(120);
    slots.forEach((slot, i) => expect(slot.getTime()).toBe(Date.parse('2026-10-25T00:31:00Z') + i * 60_000));
  });

  it('an hourly schedule fires on both 02:00s of fall-back and once across spring-forward', () => {
    const hourly = new FireTimes('0 * * * *', 'Europe/Berlin');
    expect(hourly.between(new Date('2026-10-24T23:30:00Z'), new Date('2026-10-25T02:30:00Z')).map((d) => local(d, 'Europe/Berlin'))).toEqual([
      '2026-10-25 02:00 +02:00',
      '2026-10-25 02:00 +01:00',
      '2026-10-25 03:00 +01:00',
    ]);
    expect(hourly.between(new Date('2026-03-28T23:30:00Z'), new Date('2026-03-29T02:30:00Z')).map((d) => local(d, 'Europe/Berlin'))).toEqual([
      '2026-03-29 01:00 +01:00',
      '2026-03-29 03:00 +02:00',
      '2026-03-29 04:00 +02:00',
    ]);
  });

  it('a schedule with a fixed hour runs each local time once on fall-back', () => {
    expect(fires('*/15 2 * * *', 'Europe/Berlin', '2026-10-24T22:00:00Z', '2026-10-25T04:00:00Z')).toEqual([
      '2026-10-25 02:00 +02:00',
      '2026-10-25 02:15 +02:00',
      '2026-10-25 02:30 +02:00',
      '2026-10-25 02:45 +02:00',
    ]);
  });
});
