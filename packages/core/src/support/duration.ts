/**
 * A length of time: milliseconds as a number, or a string such as `'250ms'`, `'30s'`, `'5m'`,
 * `'2h'`, `'1d'`.
 */
// eslint-disable-next-line @typescript-eslint/no-redundant-type-constituents -- the template type shows editors the format; `string` still takes strings from config
export type Duration = number | `${number}${DurationUnit}` | string;

type DurationUnit = 'ms' | 's' | 'm' | 'h' | 'd';

const UNIT_MS: Record<DurationUnit, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PATTERN = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/;

/** The largest delay a Node timer (and our backoff) accepts: 2^31 - 1 ms, about 24.8 days. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Parses a {@link Duration} into milliseconds. Throws a `TypeError` naming the value when it is
 * not a finite, non-negative number or a string in one of the documented units.
 */
export function toMs(value: Duration): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) throw new TypeError(`Invalid duration ${value}: use a finite number of milliseconds >= 0`);
    return value;
  }
  const match = typeof value === 'string' ? PATTERN.exec(value) : null;
  if (!match) {
    throw new TypeError(`Invalid duration ${JSON.stringify(value)}: use milliseconds or a string like '250ms', '30s', '5m', '2h', '1d'`);
  }
  return Math.round(Number(match[1]) * UNIT_MS[match[2] as DurationUnit]);
}

/** True when `value` parses as a {@link Duration}. */
export function isDuration(value: unknown): value is Duration {
  try {
    toMs(value as Duration);
    return true;
  } catch {
    return false;
  }
}
