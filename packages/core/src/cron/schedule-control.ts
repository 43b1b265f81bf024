import type { Clock } from '../support/clock.js';
import type { EnqueueResult } from '../store/job-record.js';
import type { JobStore } from '../store/store.js';
import type { FireTimes } from './fire-times.js';
import { ScheduleNotFoundError } from '../support/errors.js';
import type { ScheduledJob } from './scheduler.js';

/** One schedule as `loom.schedules.list()` reports it. */
export interface ScheduleInfo {
  /** The job name. */
  name: string;
  cron: string;
  timezone: string;
  paused: boolean;
  /** The newest slot already enqueued (or skipped by a policy), null before the first. */
  lastFireAt: Date | null;
  /** The next fire time after now; null while paused. */
  nextFireAt: Date | null;
}

/** How many times `resume` retries its compare-and-set when other instances advance concurrently. */
const RESUME_ATTEMPTS = 5;

/** The idempotency key of a triggered run: one job per schedule and trigger instant, apart from the slots' keys. */
export function triggerIdempotencyKey(jobName: string, at: Date): string {
  return `cron:${jobName}:trigger:${at.toISOString()}`;
}

/**
 * Unpauses a schedule so that it fires again from its next fire time: slots that passed while it
 * was paused are marked done first (whatever `catchUp` says). Shared by `loom.schedules` and the
 * `loom` command line (which knows the fire times from the schedule's stored description).
 */
export async function resumeSchedule(store: JobStore, clock: Clock, name: string, fireTimes: FireTimes): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const now = clock.now();
    const state = await store.ensureSchedule(name, now);
    if (!state.paused) return;
    const from = state.lastFireAt ?? state.firstSeenAt;
    const passed = now > from ? fireTimes.latest(from, now, 1).slots[0] : undefined;
    if (passed === undefined || (await store.advanceSchedule(name, state.lastFireAt, passed, now))) break;
    if (attempt === RESUME_ATTEMPTS) break;
  }
  await store.setSchedulePaused(name, false, clock.now());
}

/**
 * Runtime control of the schedules, exposed as `loom.schedules`. State lives in the store, so a
 * pause made through one engine instance holds for every instance on that store (from their next
 * tick).
 */
export class ScheduleControl {
  constructor(
    private readonly deps: {
      store: JobStore;
      clock: Clock;
      schedules: ScheduledJob[];
      /** Enqueues one run of the schedule's job now (key {@link triggerIdempotencyKey}, `scheduledFor` = now). */
      enqueueTrigger: (jobName: string, at: Date, payload: unknown) => Promise<EnqueueResult>;
    },
  ) {}

  /** Stops the schedule from firing until {@link resume}. A run already enqueued still runs. */
  async pause(name: string): Promise<void> {
    this.#find(name);
    const now = this.deps.clock.now();
    await this.deps.store.ensureSchedule(name, now);
    await this.deps.store.setSchedulePaused(name, true, now);
  }

  /**
   * Lets the schedule fire again from its next fire time. Slots that passed while it was paused are
   * not run (whatever `catchUp` says): they are marked done before the schedule is unpaused.
   */
  async resume(name: string): Promise<void> {
    await resumeSchedule(this.deps.store, this.deps.clock, name, this.#find(name).schedule.fireTimes);
  }

  /**
   * Enqueues one run of the schedule now, outside its slots (also while paused), with the
   * schedule's payload; the slots are not moved. Returns the job's id.
   */
  async trigger(name: string): Promise<EnqueueResult> {
    const { schedule } = this.#find(name);
    return this.deps.enqueueTrigger(name, this.deps.clock.now(), schedule.payload);
  }

  /** Every schedule of this engine with its state, sorted by name. */
  async list(): Promise<ScheduleInfo[]> {
    const records = new Map((await this.deps.store.listSchedules()).map((record) => [record.name, record]));
    const now = this.deps.clock.now();
    return this.deps.schedules
      .map(({ jobName, schedule }): ScheduleInfo => {
        const record = records.get(jobName);
        const paused = record?.paused ?? false;
        const from = record ? (record.lastFireAt ?? record.firstSeenAt) : now;
        return {
          name: jobName,
          cron: schedule.cron,
          timezone: schedule.timezone,
          paused,
          lastFireAt: record?.lastFireAt ?? null,
          nextFireAt: paused ? null : schedule.fireTimes.next(from > now ? from : now),
        };
      })
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  #find(name: string): ScheduledJob {
    const found = this.deps.schedules.find((scheduled) => scheduled.jobName === name);
    if (!found)
      throw new ScheduleNotFoundError(
        name,
        this.deps.schedules.map((scheduled) => scheduled.jobName),
      );
    return found;
  }
}
