import type { Clock } from '../support/clock.js';
import { LoomError, ScheduleNotFoundError } from '../support/errors.js';
import type { EnqueueResult, ScheduleDescription, ScheduleRecord } from '../store/job-record.js';
import type { JobStore } from '../store/store.js';
import { FireTimes } from './fire-times.js';
import { resumeSchedule, triggerIdempotencyKey, type ScheduleInfo } from './schedule-control.js';

/** A schedule as the store knows it; `cron` and `timezone` are absent until an engine described it. */
export interface StoredScheduleInfo extends Omit<ScheduleInfo, 'cron' | 'timezone'> {
  cron?: string;
  timezone?: string;
}

/**
 * The schedules of a store, steered without the job classes (the `loom` command line): what a run
 * is and when it fires come from the description each engine stores when it starts.
 */
export class StoredSchedules {
  constructor(private readonly deps: { store: JobStore; clock: Clock }) {}

  /** Every schedule in the store, by name. */
  async list(): Promise<StoredScheduleInfo[]> {
    const now = this.deps.clock.now();
    return (await this.deps.store.listSchedules()).map((record) => {
      const info: StoredScheduleInfo = { name: record.name, paused: record.paused, lastFireAt: record.lastFireAt, nextFireAt: null };
      if (record.description) {
        info.cron = record.description.cron;
        info.timezone = record.description.timezone;
        const from = record.lastFireAt ?? record.firstSeenAt;
        if (!record.paused) info.nextFireAt = fireTimesOf(record.name, record.description).next(from > now ? from : now);
      }
      return info;
    });
  }

  /** Stops the schedule from firing (in every engine sharing the store, from their next tick). */
  async pause(name: string): Promise<void> {
    await this.#find(name);
    await this.deps.store.setSchedulePaused(name, true, this.deps.clock.now());
  }

  /** Lets it fire again from its next fire time (slots missed while paused are not run). */
  async resume(name: string): Promise<void> {
    const description = this.#described(await this.#find(name), 'resume');
    await resumeSchedule(this.deps.store, this.deps.clock, name, fireTimesOf(name, description));
  }

  /** Enqueues one run now, outside the slots, as the schedule's engine would. */
  async trigger(name: string): Promise<EnqueueResult> {
    const { job } = this.#described(await this.#find(name), 'trigger');
    const now = this.deps.clock.now();
    const [result] = await this.deps.store.enqueue(
      [
        {
          name,
          queue: job.queue,
          payload: job.payload,
          priority: job.priority,
          runAt: now,
          maxAttempts: job.maxAttempts,
          idempotencyKey: triggerIdempotencyKey(name, now),
          scheduledFor: now,
        },
      ],
      { now },
    );
    return result!;
  }

  async #find(name: string): Promise<ScheduleRecord> {
    const all = await this.deps.store.listSchedules();
    const found = all.find((s) => s.name === name);
    if (!found)
      throw new ScheduleNotFoundError(
        name,
        all.map((s) => s.name),
      );
    return found;
  }

  #described(record: ScheduleRecord, action: string): ScheduleDescription {
    if (record.description) return record.description;
    throw new LoomError(
      'SCHEDULE_NOT_FOUND',
      `Schedule "${record.name}" cannot ${action} from here: the store has no description of it yet (an engine of Loom 0.2 or later stores one when it starts); start one, or use loom.schedules.${action} in code`,
    );
  }
}

function fireTimesOf(name: string, description: ScheduleDescription): FireTimes {
  try {
    return new FireTimes(description.cron, description.timezone);
  } catch (err) {
    throw new LoomError(
      'INVALID_SCHEDULE',
      `Schedule "${name}": its stored cron expression ${JSON.stringify(description.cron)} cannot be read: ${(err as Error).message}`,
      { cause: err },
    );
  }
}
