import type { Clock } from '../support/clock.js';
import type { EnqueueResult, JobRecord, ScheduleRecord } from '../store/job-record.js';
import type { Logger } from '../support/logger.js';
import type { JobStore } from '../store/store.js';
import type { ScheduleEventMap, ScheduleEventName } from './schedule-events.js';
import type { CompiledSchedule } from './schedule-options.js';
import { oldestOnly, selectSlots, type SlotSelection } from './slot-selection.js';
import { withDeadline } from '../support/store-deadline.js';

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
  emit: <E extends ScheduleEventName>(event: E, payload: ScheduleEventMap[E]) => void;
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
  /**
   * How long a tick waits for one store call (ms) before it gives the schedule up until the next
   * tick: a call that never answers would otherwise stop every later tick, and `stop()` with them.
   * The engine passes its lease, as for a claim. Default 60 000.
   */
  storeDeadlineMs?: number;
}

/** The idempotency key of a schedule's slot: one job per schedule and fire time (UTC). */
export function cronIdempotencyKey(jobName: string, fireAt: Date): string {
  return `cron:${jobName}:${fireAt.toISOString()}`;
}

/** Active statuses: a cron run in one of these has not finished. */
const UNFINISHED: JobRecord['status'][] = ['queued', 'running', 'waiting'];

/**
 * How long a schedule's `firing` slots may stay unconfirmed before another instance enqueues them:
 * 1 minute. The instance that advanced enqueues them within milliseconds; still there a minute
 * later, it died in between.
 */
export const FIRING_RECOVERY_DELAY_MS = 60_000;

const NOTHING_TO_REPORT: SlotSelection = { fire: [], advanceTo: null, missed: null };

/**
 * Turns each schedule's due fire times into jobs. Any number of schedulers (one per engine
 * instance) can share a store: each slot's job is deduplicated by its idempotency key, and the
 * schedule's `lastFireAt` only moves forward through the store's compare-and-set.
 *
 * One tick, per schedule: read the state (`ensureSchedule`), choose the due slots
 * ({@link selectSlots}), move `lastFireAt` to the newest due slot while recording the slots to fire
 * (`firing`), enqueue them, then clear `firing`. Only the instance whose advance won enqueues, so
 * a slot's job is enqueued by one instance, once. A crash between the advance and the enqueue
 * leaves `firing` set: an instance enqueues those slots at its next tick after
 * {@link FIRING_RECOVERY_DELAY_MS} (the idempotency key makes a repeat a no-op).
 */
export class Scheduler {
  readonly #options: SchedulerOptions;
  readonly #maxTickInterval: number;
  readonly #storeDeadlineMs: number;
  #cancelTimer: (() => void) | null = null;
  #running = false;
  /** Ticks run one after another, never interleaved. */
  #queue: Promise<void> = Promise.resolve();

  constructor(options: SchedulerOptions) {
    this.#options = options;
    this.#maxTickInterval = options.maxTickInterval ?? 60_000;
    this.#storeDeadlineMs = options.storeDeadlineMs ?? 60_000;
  }

  /** `call` (the store's `operation`, or an enqueue through it), waited for at most the store deadline. */
  #within<T>(operation: string, call: Promise<T>): Promise<T> {
    return withDeadline(this.#options.clock, operation, this.#storeDeadlineMs, call);
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
    const state = await this.#within('ensureSchedule', store.ensureSchedule(jobName, now));
    // Slots an earlier advance chose and did not see enqueued: decided before any pause, so they run.
    if (state.firing.length > 0) {
      const recoverAt = new Date(state.updatedAt.getTime() + FIRING_RECOVERY_DELAY_MS);
      // Another instance is enqueueing them right now (or died doing so): look again once it surely finished.
      if (now < recoverAt) return recoverAt;
      this.#report(jobName, state, NOTHING_TO_REPORT, await this.#fire(jobName, state.lastFireAt!, state.firing, schedule.payload), null, false);
    }
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
    const fire = blocker === null ? selection.fire : [];
    // Advance first, naming the slots to fire in the same write: only the instance that wins the
    // slot enqueues it. Enqueueing first let a late instance enqueue a slot again after its job had
    // died (a dead job frees its idempotency key). Never move lastFireAt back: a CAS to an older
    // slot could let a slot fire twice.
    const advanced =
      state.lastFireAt !== null && selection.advanceTo <= state.lastFireAt
        ? false
        : await this.#within('advanceSchedule', store.advanceSchedule(jobName, state.lastFireAt, selection.advanceTo, now, fire));
    const fired = advanced ? await this.#fire(jobName, selection.advanceTo, fire, schedule.payload) : [];
    this.#report(jobName, state, selection, fired, blocker, advanced);
    return next;
  }

  /** Enqueues the runs of `slots` (claimed by the advance to `firedUpTo`), then clears the schedule's `firing`. */
  async #fire(jobName: string, firedUpTo: Date, slots: Date[], payload: unknown): Promise<Array<{ fireAt: Date; result: EnqueueResult }>> {
    const fired: Array<{ fireAt: Date; result: EnqueueResult }> = [];
    if (slots.length === 0) return fired;
    for (const fireAt of slots) fired.push({ fireAt, result: await this.#within('enqueue', this.#options.enqueueFire(jobName, fireAt, payload)) });
    await this.#within('markScheduleFired', this.#options.store.markScheduleFired(jobName, firedUpTo, this.#options.clock.now()));
    return fired;
  }

  /**
   * A cron run of this schedule for an earlier slot that has not finished (queued, running or
   * waiting), or null. Runs enqueued by hand (no `scheduledFor`) do not count. The store filters:
   * at most one job is read, however many runs of this name are queued.
   */
  async #unfinishedRun(jobName: string, slot: Date): Promise<JobRecord | null> {
    const [run] = await this.#within('listJobs', this.#options.store.listJobs({ name: jobName, status: UNFINISHED, scheduledBefore: slot, limit: 1 }));
    return run ?? null;
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
