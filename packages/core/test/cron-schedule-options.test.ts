import { describe, expect, it } from '@jest/globals';
import { LoomError } from '../src/support/errors.js';
import { compileSchedule } from '../src/cron/schedule-options.js';
import { scheduleOptionsSchema } from '../src/jobs/schedule-options-schema.js';

function failure(spec: unknown): { code: string; option: string; message: string } {
  try {
    compileSchedule('NightlyReport', spec);
  } catch (error) {
    if (!LoomError.is(error)) throw error;
    const { code, message } = error;
    return { code, option: (error as unknown as { option: string }).option, message };
  }
  throw new Error(`expected ${JSON.stringify(spec)} to be refused`);
}

describe('compileSchedule', () => {
  it('accepts a cron string and applies the defaults (UTC, latest, skip)', () => {
    const compiled = compileSchedule('NightlyReport', ' */5 * * * * ');
    expect(compiled).toMatchObject({ cron: '*/5 * * * *', timezone: 'UTC', catchUp: 'latest', overlap: 'skip', payload: undefined });
    expect(compiled.fireTimes.next(new Date('2026-01-01T00:01:00Z'))).toEqual(new Date('2026-01-01T00:05:00Z'));
  });

  it('accepts the object form and canonicalises the zone name', () => {
    const compiled = compileSchedule('NightlyReport', {
      cron: '0 3 * * *',
      timezone: 'europe/berlin',
      payload: { kind: 'daily' },
      catchUp: 'all',
      overlap: 'allow',
    });
    expect(compiled).toMatchObject({ timezone: 'Europe/Berlin', payload: { kind: 'daily' }, catchUp: 'all', overlap: 'allow' });
  });

  it.each([
    ['61 * * * *', 'out of range'],
    ['* * *', 'Too few fields'],
    ['every day', 'Unknown alias'],
    ['*/0 * * * *', 'step of zero'],
    ['0 0 30 2 *', 'No execution date'],
    ['', ''],
  ])('refuses the expression %j naming the class and schedule.cron', (cron, detail) => {
    const error = failure({ cron });
    expect(error).toMatchObject({ code: 'INVALID_JOB_OPTIONS', option: 'schedule.cron' });
    expect(error.message).toContain('@Job on class NightlyReport');
    expect(error.message).toContain(detail);
    expect(error.message).toContain("'*/5 * * * *'");
  });

  it.each(['Mars/Olympus', 'UTC+2', ''])('refuses the time zone %j naming schedule.timezone', (timezone) => {
    const error = failure({ cron: '0 3 * * *', timezone });
    expect(error).toMatchObject({ code: 'INVALID_JOB_OPTIONS', option: 'schedule.timezone' });
    expect(error.message).toMatch(/class NightlyReport: option "schedule.timezone" is not an IANA time zone/);
  });

  // Node 24's Intl takes "+02:00" as a time zone, Node 20's does not: Loom refuses offsets on
  // every Node (CI runs this file on 20, 22 and 24).
  it.each([
    ['+02:00', "or 'Etc/GMT-2' for a fixed +02:00"],
    ['-0500', "or 'Etc/GMT+5' for a fixed -0500"],
    ['+05:30', "'Europe/Berlin', which follows daylight saving"],
    ['+02', "'Etc/GMT-2'"],
  ])('refuses the UTC offset %j as a time zone on every Node version, saying what to write', (timezone, advice) => {
    const error = failure({ cron: '0 3 * * *', timezone });
    expect(error).toMatchObject({ code: 'INVALID_JOB_OPTIONS', option: 'schedule.timezone' });
    expect(error.message).toContain(`is a fixed UTC offset (${JSON.stringify(timezone)}), not an IANA time zone`);
    expect(error.message).toContain(advice);
  });

  it('takes the Etc/GMT zone an offset error suggests', () => {
    expect(compileSchedule('NightlyReport', { cron: '0 3 * * *', timezone: 'Etc/GMT-2' }).timezone).toBe('Etc/GMT-2');
  });

  it('refuses bad policies and unknown fields, naming the field', () => {
    expect(failure({ cron: '* * * * *', catchUp: 'sometimes' })).toMatchObject({ option: 'schedule.catchUp' });
    expect(failure({ cron: '* * * * *', overlap: 'queue' })).toMatchObject({ option: 'schedule.overlap' });
    expect(failure({ cron: '* * * * *', catchup: 'all' })).toMatchObject({ option: 'schedule.catchup' });
    expect(failure({ timezone: 'UTC' })).toMatchObject({ option: 'schedule.cron' });
    expect(failure(42)).toMatchObject({ option: 'schedule' });
    expect(failure(null).message).toContain('must be a cron string or { cron');
  });

  it('exports the zod schema for the option', () => {
    expect(scheduleOptionsSchema.safeParse({ cron: '* * * * *', catchUp: 'none' }).success).toBe(true);
    expect(scheduleOptionsSchema.safeParse({ cron: 5 }).success).toBe(false);
  });
});
