import { CronTime } from 'cron';
import { DateTime } from 'luxon';

/**
 * Fire times of a cron expression in an IANA time zone, as UTC instants.
 *
 * The `cron` package parses the expression and finds the next matching *wall-clock* time. We ask
 * it in UTC only (where wall time and instants coincide and its DST heuristics are inert) and map
 * wall times to instants ourselves, because its own DST handling is wrong in places (measured with
 * cron 4.4.0 / luxon 3.7):
 * - America/New_York, fall-back day: `30 2 * * *` fires at 01:30 EST *and* 02:30 EST (twice, and
 *   once at a time the user never wrote).
 * - Southern-hemisphere zones (Australia/Sydney, America/Santiago): a slot in the spring-forward
 *   gap fires at 03:30 instead of the 03:00 it uses in the northern hemisphere, because it compares
 *   against the January offset, which is the DST offset there.
 *
 * The fire set is defined canonically (independent of where an enumeration starts), so every
 * engine instance, whatever its starting point, computes the same slots:
 * - A wall time that exists once fires at that instant.
 * - A wall time in a spring-forward gap fires at the end of the gap (the first valid instant, e.g.
 *   03:00 for 02:30 in Europe/Berlin); several such wall times collapse into that one instant.
 * - A wall time repeated by a fall-back fires once, at its first occurrence. Exception: when the
 *   hour field is `*` (every hour: `* * * * *`, `*\/5 * * * *`, `0 * * * *`) the schedule is an
 *   interval rather than a time of day and also fires in the repeated hour, so "every 5 minutes"
 *   never pauses for an hour (ISC/Vixie cron treats wildcard jobs the same way).
 */
export class FireTimes {
  private readonly cronTime: CronTime;
  /** The hour field matches every hour: fire in both passes of a repeated hour. */
  readonly followsElapsedTime: boolean;
  /** Matches only at second 0 (5-field expressions): the next match depends on the minute alone. */
  private readonly wholeMinutes: boolean;
  /**
   * Wall time → next matching wall time. `getNextDateFrom` costs milliseconds (it walks luxon
   * dates field by field), and every tick of every instance asks about the same few minutes.
   */
  private readonly nextWallCache = new Map<number, number>();

  /** @throws the `cron` package's `CronError` for an expression it cannot parse. */
  constructor(
    readonly expression: string,
    readonly timezone: string,
  ) {
    this.cronTime = new CronTime(expression, 'UTC');
    // toJSON() lists the fields as [second, minute, hour, dayOfMonth, month, dayOfWeek], '*' when
    // every value matches.
    const [second, , hour] = this.cronTime.toJSON();
    this.followsElapsedTime = hour === '*';
    this.wholeMinutes = second === '0';
  }

  /** The first fire time strictly after `after`. */
  next(after: Date): Date {
    const t = after.getTime();
    const candidate = this.nextCanonical(t);
    if (!this.followsElapsedTime) return new Date(candidate);
    // Interval-like schedules also fire when the wall clock replays an hour after a fall-back
    // between `t` and the candidate found by walking wall time forward.
    const fallBack = this.offsetAt(candidate) < this.offsetAt(t) ? this.transitionIn(t, candidate) : null;
    if (fallBack === null) return new Date(candidate);
    // Walk again from the wall time the clock is set back to (minus a second: the `cron` package
    // returns matches strictly after a whole second).
    const replayed = this.nextCanonical(fallBack - 1, fallBack + this.offsetAt(fallBack) - 1_000);
    return new Date(Math.min(candidate, replayed));
  }

  /** Fire times in `(after, until]`, oldest first, at most `limit` of them (the oldest ones). */
  between(after: Date, until: Date, limit = Number.POSITIVE_INFINITY): Date[] {
    const out: Date[] = [];
    let cursor = after;
    while (out.length < limit) {
      const next = this.next(cursor);
      if (next > until) break;
      out.push(next);
      cursor = next;
    }
    return out;
  }

  /**
   * The newest fire times in `(after, until]`, oldest first, at most `limit`; `complete` says
   * whether these are all of them. Searches backwards from `until` in doubling windows, so a long
   * downtime of a minutely schedule does not enumerate every missed minute.
   */
  latest(after: Date, until: Date, limit: number): { slots: Date[]; complete: boolean } {
    // The usual tick has zero or one slot due: walk forward from `after` first.
    const forward = this.between(after, until, limit + 1);
    if (forward.length <= limit) return { slots: forward, complete: true };
    const floor = after.getTime();
    for (let window = 60_000; ; window *= 2) {
      const start = Math.max(floor, until.getTime() - window);
      const slots = this.between(new Date(start), until);
      if (slots.length >= limit || start === floor) {
        return { slots: slots.slice(-limit), complete: start === floor && slots.length <= limit };
      }
    }
  }

  /** The first canonical fire instant strictly after `t`, walking wall time forward from `wall`. */
  private nextCanonical(t: number, wall = t + this.offsetAt(t)): number {
    for (;;) {
      wall = this.nextWall(wall);
      const instant = this.instantOf(wall, t);
      if (instant !== null) return instant;
    }
  }

  /** The next wall time (encoded as UTC) matching the expression, strictly after `wall`'s second. */
  private nextWall(wall: number): number {
    // Results only depend on the whole second (the package drops milliseconds), or on the whole
    // minute when matches fall on second 0: normalise so nearby questions share one answer.
    const key = wall - (((wall % this.resolution) + this.resolution) % this.resolution);
    let next = this.nextWallCache.get(key);
    if (next === undefined) {
      next = this.cronTime.getNextDateFrom(new Date(key), 'UTC').toMillis();
      if (this.nextWallCache.size >= 4096) this.nextWallCache.clear();
      this.nextWallCache.set(key, next);
    }
    return next;
  }

  private get resolution(): number {
    return this.wholeMinutes ? 60_000 : 1_000;
  }

  /**
   * The fire instant of wall time `wall` (encoded as if it were UTC) if it is after `t`, else
   * null. Gap: the end of the gap. Repeated: the first occurrence, or (elapsed-time schedules) the
   * first occurrence after `t`.
   */
  private instantOf(wall: number, t: number): number | null {
    const DAY = 86_400_000;
    const offsets = [...new Set([this.offsetAt(wall - DAY), this.offsetAt(wall + DAY)])];
    const occurrences = offsets
      .map((offset) => wall - offset)
      .filter((instant) => instant + this.offsetAt(instant) === wall)
      .sort((a, b) => a - b);
    if (occurrences.length === 0) {
      const [before, after] = [this.offsetAt(wall - DAY), this.offsetAt(wall + DAY)];
      const gapEnd = this.transitionIn(wall - before, wall - after);
      return gapEnd !== null && gapEnd > t ? gapEnd : null;
    }
    const eligible = this.followsElapsedTime ? occurrences : occurrences.slice(0, 1);
    return eligible.find((instant) => instant > t) ?? null;
  }

  /**
   * The first instant in `(from, to]` whose UTC offset differs from the offset at `from`, by
   * bisection to the millisecond; null when the offset does not change in between.
   */
  private transitionIn(from: number, to: number): number | null {
    const [lo0, hi0] = from < to ? [from, to] : [to, from];
    const base = this.offsetAt(lo0);
    if (this.offsetAt(hi0) === base) return null;
    let [lo, hi] = [lo0, hi0];
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (this.offsetAt(mid) === base) lo = mid;
      else hi = mid;
    }
    return hi;
  }

  /** The zone's UTC offset at an instant, in milliseconds. */
  private offsetAt(instant: number): number {
    if (this.timezone === 'UTC') return 0;
    return DateTime.fromMillis(instant, { zone: this.timezone }).offset * 60_000;
  }
}
