import type { ScheduleDescription, ScheduleRecord } from '../job-record.js';
import { clonePlain } from './clone.js';

const copyDate = (date: Date): Date => new Date(date.getTime());

/** The cron schedules' state in a MemoryStore: the operations of `JobStore` on schedules, synchronous. */
export class ScheduleTable {
  readonly #schedules = new Map<string, ScheduleRecord>();

  ensure(name: string, now: Date): ScheduleRecord {
    let schedule = this.#schedules.get(name);
    if (!schedule) {
      schedule = { name, lastFireAt: null, firstSeenAt: copyDate(now), firing: [], paused: false, updatedAt: copyDate(now) };
      this.#schedules.set(name, schedule);
    }
    return clonePlain(schedule);
  }

  /** Stores what the schedule enqueues (an owned copy), creating the schedule if needed. */
  describe(name: string, description: ScheduleDescription, now: Date): void {
    this.ensure(name, now);
    const schedule = this.#schedules.get(name)!;
    schedule.description = description;
    schedule.updatedAt = copyDate(now);
  }

  /** Compare-and-set of `lastFireAt` (null matches null only); `fire`, when given, becomes `firing`. */
  advance(name: string, expected: Date | null, next: Date, now: Date, fire: Date[] | undefined): boolean {
    const schedule = this.#schedules.get(name);
    if (!schedule || (schedule.lastFireAt?.getTime() ?? null) !== (expected?.getTime() ?? null)) return false;
    schedule.lastFireAt = copyDate(next);
    if (fire !== undefined) schedule.firing = fire.map(copyDate);
    schedule.updatedAt = copyDate(now);
    return true;
  }

  /** Clears `firing` if `lastFireAt` still equals `firedUpTo`. */
  markFired(name: string, firedUpTo: Date, now: Date): boolean {
    const schedule = this.#schedules.get(name);
    if (schedule?.lastFireAt?.getTime() !== firedUpTo.getTime()) return false;
    schedule.firing = [];
    schedule.updatedAt = copyDate(now);
    return true;
  }

  setPaused(name: string, paused: boolean, now: Date): boolean {
    const schedule = this.#schedules.get(name);
    if (!schedule) return false;
    schedule.paused = paused;
    schedule.updatedAt = copyDate(now);
    return true;
  }

  /** Every schedule, by name. */
  list(): ScheduleRecord[] {
    return [...this.#schedules.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((s) => clonePlain(s));
  }
}
