import { IANAZone } from 'luxon';
import type { z } from 'zod';
import { InvalidJobOptionsError } from '../support/errors.js';
import { FireTimes } from './fire-times.js';
import { scheduleOptionsSchema, type CatchUpPolicy, type OverlapPolicy } from '../jobs/schedule-options-schema.js';

/** A validated schedule with its defaults applied and its fire times ready to compute. */
export interface CompiledSchedule {
  readonly cron: string;
  /** Canonical IANA name, e.g. `'Europe/Berlin'`. */
  readonly timezone: string;
  readonly payload: unknown;
  readonly catchUp: CatchUpPolicy;
  readonly overlap: OverlapPolicy;
  readonly fireTimes: FireTimes;
}

const DEFAULT_TIMEZONE = 'UTC';

/**
 * Validates a `schedule` option. Throws {@link InvalidJobOptionsError} naming the class and the
 * field (`schedule`, `schedule.cron`, `schedule.timezone`, `schedule.catchUp`, ...).
 */
export function compileSchedule(className: string, spec: unknown): CompiledSchedule {
  const parsed = scheduleOptionsSchema.safeParse(spec);
  if (!parsed.success) throw optionError(className, parsed.error);
  const options = typeof parsed.data === 'string' ? { cron: parsed.data } : parsed.data;

  const timezone = canonicalZone(className, options.timezone ?? DEFAULT_TIMEZONE);
  let fireTimes: FireTimes;
  try {
    fireTimes = new FireTimes(options.cron.trim(), timezone);
    // An expression that parses but never matches (e.g. 30 February) only fails when asked for a
    // fire time: ask once now so it fails at startup, not in the scheduler loop.
    fireTimes.next(new Date(0));
  } catch (error) {
    throw new InvalidJobOptionsError(
      className,
      'schedule.cron',
      `is not a usable cron expression (${JSON.stringify(options.cron)}: ${(error as Error).message.split('\n')[0]}); ` +
        "write 5 fields 'minute hour day-of-month month day-of-week' (or 6 with seconds first), e.g. '*/5 * * * *'",
    );
  }
  return {
    cron: options.cron.trim(),
    timezone,
    payload: options.payload,
    catchUp: options.catchUp ?? 'latest',
    overlap: options.overlap ?? 'skip',
    fireTimes,
  };
}

/** `+02:00`, `-0530`, `+02`: a fixed UTC offset rather than a zone name. */
const UTC_OFFSET = /^[+-](\d{2})(?::?(\d{2}))?$/;

function canonicalZone(className: string, zone: string): string {
  // Node 24's Intl accepts offsets as time zones and Node 20's does not: refuse them on every
  // Node, so a schedule that starts on one version starts on all of them.
  const offset = UTC_OFFSET.exec(zone.trim());
  if (offset) {
    const wholeHours = (offset[2] ?? '00') === '00';
    const hours = Number(offset[1]);
    // IANA's Etc/GMT zones count the other way round: Etc/GMT-2 is UTC+02:00.
    const etc = `Etc/GMT${zone.trim().startsWith('+') ? '-' : '+'}${hours}`;
    throw new InvalidJobOptionsError(
      className,
      'schedule.timezone',
      `is a fixed UTC offset (${JSON.stringify(zone)}), not an IANA time zone; use the zone's name, e.g. 'Europe/Berlin', which follows daylight saving` +
        (wholeHours && hours <= 12 ? `, or '${etc}' for a fixed ${zone.trim()}` : ''),
    );
  }
  if (!IANAZone.isValidZone(zone)) {
    throw new InvalidJobOptionsError(
      className,
      'schedule.timezone',
      `is not an IANA time zone (${JSON.stringify(zone)}); use a name such as 'Europe/Berlin' or 'UTC'`,
    );
  }
  return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
}

function optionError(className: string, error: z.ZodError): InvalidJobOptionsError {
  // The union reports either "not a string" or the object branch's issues; show the most specific.
  const issues = error.issues.flatMap((issue) => (issue.code === 'invalid_union' ? issue.errors.flat() : [issue]));
  const unknown = issues.find((issue) => issue.code === 'unrecognized_keys');
  if (unknown?.code === 'unrecognized_keys') {
    return new InvalidJobOptionsError(className, `schedule.${unknown.keys[0]}`, 'is not a schedule option; use cron, timezone, payload, catchUp or overlap');
  }
  const specific = issues.find((issue) => issue.path.length > 0);
  if (!specific) {
    return new InvalidJobOptionsError(
      className,
      'schedule',
      "must be a cron string or { cron, timezone?, payload?, catchUp?: 'latest' | 'all' | 'none', overlap?: 'allow' | 'skip' }",
    );
  }
  const field = ['schedule', ...specific.path.map(String)].join('.');
  return new InvalidJobOptionsError(className, field, `is invalid: ${specific.message}`);
}
