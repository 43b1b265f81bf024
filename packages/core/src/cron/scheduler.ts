import type { Clock } from '../support/clock.js';
import type { EnqueueResult, JobRecord, ScheduleRecord } from '../store/job-record.js';
import type { Logger } from '../support/logger.js';
import type { JobStore } from '../store/store.js';
import type { ScheduleEventMap, ScheduleEventName } from './schedule-events.js';
import type { CompiledSchedule } from './schedule-options.js';
import { oldestOnly, selectSlots, type SlotSelection } from './slot-selection.js';

/** A job class with a schedule, as the engine registered it. */
export interface ScheduledJob {
  /** The job's stored name; also the schedule's name. */
  jobName: string;
  /** For log lines and errors. */
  className: string;
  schedule: CompiledSchedule;
}

/** The logger calls the scheduler makes (pino-compatible: fields first, then the message). */
export type SchedulerLogger = Pick<Logger, 'info' | 'warn' | 'error'>;

/** What the engine gives the scheduler. */
export interface SchedulerOptions {
  store: JobStore;
  clock: Clock;
  logger: SchedulerLogger;
  /** Emits a `schedule:*` event to the engine's listeners. */
  emit<E extends ScheduleEventName>(event: E, payload: ScheduleEventMap[E]): void;
  schedules: ScheduledJob[];
  /**
   * Enqueues the run of `jobName` for the slot `fireAt`, idempotently: the engine uses the key
   * {@link cronIdempotencyKey} and `scheduledFor = runAt = fireAt`, so every instance enqueueing
   * the same slot gets the same single job.
   */
  enqueueFire(jobName: string, fireAt: Date, payload: unknown): Promise<EnqueueResult>;
  /**
   * Longest wait between ticks (ms), so pauses, resumes and other instances' progress are seen
   * even when the next fire time is far away. Default 60 000.
   */
  maxTickInterval?: number;
}

/** The idempotency key of a schedule's slot: one job per schedule and fire time (UTC). */
export function cronIdempotencyKey(jobName: string, fireAt: Date): string {
  return `cron:${jobName}:${fireAt.toISOString()}`;
}

/** Active statuses: a cron run in one of these has not finished. */
const UNFINISHED: JobRecord['status'][] = ['queued', 'running', 'waiting'];

/**
 * Turns each schedule's due fire times into jobs. Any number of schedulers (one per engine
 * instance) can share a store: each slot's job is deduplicated by its idempotency key, and the
 * schedule's `lastFireAt` only moves forward through the store's compare-and-set.
 *
 * One tick, per schedule: read the state (`ensureSchedule`), choose the due slots
 * ({@link selectSlots}), enqueue them, then move `lastFireAt` to the newest due slot. Enqueueing
 * before advancing means a crash in between re-enqueues (a no-op) rather than loses the slot.
 */
export class Scheduler {
  readonly #options: SchedulerOptions;
  readonly #maxTickInterval: number;
  #cancelTimer: (() => void) | null = null;
  #running = false;
  /** Ticks run one after another, never interleaved. */
  #queue: Promise<void> = Promise.resolve();

  constructor(options: SchedulerOptions) {
    this.#options = options;
    this.#maxTickInterval = options.maxTickInterval ?? 60_000;
  }

  /** Registers the schedules in the store (their `firstSeenAt`), ticks once and keeps ticking. */
  async start(): Promise<void> {
    // No schedules, no timer: an engine without cron jobs keeps no periodic wake-up.
    if (this.#running || this.#options.schedules.length === 0) return;
    this.#running = true;
    await this.tick();
  }

  /** Stops ticking; resolves once a tick in progress has finished. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#cancelTimer?.();
    this.#cancelTimer = null;
    await this.#queue;
  }

  /** Ticks soon if started (the engine calls it when a cron run finishes). */
  wake(): void {
    if (this.#running) void this.tick();
  }

  /** One pass over every schedule (public for tests). Never rejects: failures are logged. */
  tick(): Promise<void> {
    const run = this.#queue
      .then(() => this.#tickOnce())
      .catch((error: unknown) => this.#options.logger.error({ err: error }, 'scheduler tick failed; retrying on the next tick'));
    this.#queue = run;
    return run;
  }

  async #tickOnce(): Promise<void> {
    const { clock, schedules } = this.#options;
    let wakeAt = clock.now().getTime() + this.#maxTickInterval;
    for (const scheduled of schedules) {
      try {
        const next = await this.#tickSchedule(scheduled);
        if (next !== null) wakeAt = Math.min(wakeAt, next.getTime());
      } catch (error) {
        this.#options.logger.error(
          { err: error, schedule: scheduled.jobName },
          `schedule ${scheduled.jobName} (class ${scheduled.className}): tick failed; retrying on the next tick`,
        );
      }
    }
    this.#arm(wakeAt);
  }

  #arm(wakeAt: number): void {
    if (!this.#running) return;
    this.#cancelTimer?.();
    const delay = Math.max(0, wakeAt - this.#options.clock.now().getTime());
    this.#cancelTimer = this.#options.clock.setTimer(() => {
      this.#cancelTimer = null;
      void this.tick();
    }, delay);
  }

  /**
   * Fires what is due for one schedule; returns when it needs the next tick (null: nothing sooner
   * than the regular wake-up, e.g. while paused or waiting for a run to finish).
   */
  async #tickSchedule({ jobName, schedule }: ScheduledJob): Promise<Date | null> {
    const { store, clock } = this.#options;
    const now = clock.now();
    const state = await store.ensureSchedule(jobName, now);
    if (state.paused) return null;
    const sequential = schedule.catchUp === 'all' && schedule.overlap === 'skip';
    const selection = sequential ? oldestOnly(selectSlots(schedule, state, now)) : selectSlots(schedule, state, now);
    // From the schedule's cursor rather than from `now`: the same fire times come up tick after
    // tick, so FireTimes answers from its cache. After `now`, except when `sequential` left slots due.
    const next = schedule.fireTimes.next(selection.advanceTo ?? state.lastFireAt ?? state.firstSeenAt);
    if (selection.advanceTo === null) return next;

    const blocker = schedule.overlap === 'skip' && selection.fire.length > 0 ? await this.#unfinishedRun(jobName, selection.fire[0]) : null;
    // Sequential catch-up waits for the run instead of skipping: nothing is enqueued or advanced.
    if (blocker !== null && sequential) return null;
    const fired: Array<{ fireAt: Date; result: EnqueueResult }> = [];
    if (blocker === null) {
      for (const fireAt of selection.fire) {
        fired.push({ fireAt, result: await this.#options.enqueueFire(jobName, fireAt, schedule.payload) });
      }
    }
    // Never move lastFireAt back: a CAS to an older slot could let a slot fire twice.
    const advanced =
      state.lastFireAt !== null && selection.advanceTo <= state.lastFireAt
        ? false
        : await store.advanceSchedule(jobName, state.lastFireAt, selection.advanceTo, now);
    this.#report(jobName, state, selection, fired, blocker, advanced);
    return next;
  }

  /**
   * A cron run of this schedule for an earlier slot that has not finished (queued, running or
   * waiting), or null. Runs enqueued by hand (no `scheduledFor`) do not count.
   */
  async #unfinishedRun(jobName: string, slot: Date): Promise<JobRecord | null> {
    const jobs = await this.#options.store.listJobs({ name: jobName, status: UNFINISHED });
    return jobs.find((job) => job.scheduledFor !== undefined && job.scheduledFor < slot) ?? null;
  }

  /**
   * Events and log lines. `schedule:fired` comes from the instance whose enqueue created the job;
   * `schedule:skipped` and `schedule:missed` from the instance that won the advance, so each is
   * reported once however many instances tick.
   */
  #report(
    name: string,
    state: ScheduleRecord,
    selection: SlotSelection,
    fired: Array<{ fireAt: Date; result: EnqueueResult }>,
    blocker: JobRecord | null,
    advanced: boolean,
  ): void {
    const { logger, emit } = this.#options;
    for (const { fireAt, result } of fired) {
      if (result.deduplicated) continue;
      logger.info({ schedule: name, fireAt, jobId: result.id }, `schedule ${name}: enqueued the run for ${fireAt.toISOString()}`);
      emit('schedule:fired', { name, fireAt, jobId: result.id });
    }
    if (!advanced) return;
    if (blocker !== null) {
      for (const fireAt of selection.fire) {
        logger.warn(
          { schedule: name, fireAt, runningJobId: blocker.id },
          `schedule ${name}: skipped the run for ${fireAt.toISOString()} because job ${blocker.id} (for ` +
            `${blocker.scheduledFor?.toISOString()}) is still ${blocker.status} (overlap: 'skip'; use overlap: 'allow' to run anyway)`,
        );
        emit('schedule:skipped', { name, fireAt, reason: 'overlap', runningJobId: blocker.id });
      }
    }
    if (selection.missed !== null) {
      const { after, upTo, reason } = selection.missed;
      const level = reason === 'catch-up-all-limit' ? 'warn' : 'info';
      logger[level](
        { schedule: name, after, upTo, reason, lastFireAt: state.lastFireAt },
        `schedule ${name}: did not run the slots after ${after.toISOString()} up to ${upTo.toISOString()} (${reason})`,
      );
      emit('schedule:missed', { name, after, upTo, reason });
    }
  }
}
