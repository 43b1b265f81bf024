/**
 * Test harness for the cron scheduler: a manual clock, and N schedulers (engine instances) on one
 * MemoryStore whose `enqueueFire` does what the engine's does (cron idempotency key, runAt =
 * scheduledFor = fire time).
 */
import type { Clock } from '../src/support/clock.js';
import { compileSchedule } from '../src/cron/schedule-options.js';
import { ScheduleControl, triggerIdempotencyKey } from '../src/cron/schedule-control.js';
import { Scheduler, cronIdempotencyKey, type ScheduledJob, type SchedulerLogger } from '../src/cron/scheduler.js';
import type { JobRecord } from '../src/store/job-record.js';
import { MemoryStore } from '../src/store/memory-store/memory-store.js';
import type { JobStore } from '../src/store/store.js';

/** A clock moved by hand; `advance` fires due timers in time order. */
export class ManualClock implements Clock {
  #now: number;
  #timers: Array<{ at: number; fn: () => void }> = [];

  constructor(
    start: string | Date,
    private readonly skewMs = 0,
    private readonly base?: ManualClock,
  ) {
    this.#now = new Date(start).getTime();
  }

  now(): Date {
    return new Date((this.base ? this.base.now().getTime() : this.#now) + this.skewMs);
  }

  /** The same time line seen with a constant offset (another machine's clock). */
  skewed(skewMs: number): ManualClock {
    return new ManualClock(new Date(0), skewMs, this);
  }

  /** Jumps to an instant, forwards or backwards, without firing timers. */
  set(instant: string | Date): void {
    this.#now = new Date(instant).getTime();
  }

  setTimer(fn: () => void, ms: number): () => void {
    const timer = { at: this.now().getTime() + ms, fn };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  get pendingTimers(): number {
    return this.#timers.length;
  }

  /** Moves time forward by `ms`, firing each due timer at its own time and letting it settle. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    for (;;) {
      const due = this.#timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#now = Math.max(this.#now, due.at);
      due.fn();
      await settle();
    }
    this.#now = target;
  }
}

/** Lets promise chains started by timer callbacks finish (the MemoryStore never waits on I/O). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export interface LogLine {
  level: 'info' | 'warn' | 'error';
  fields: Record<string, unknown>;
  msg?: string;
}

export interface CronInstances {
  store: MemoryStore;
  schedulers: Scheduler[];
  controls: ScheduleControl[];
  events: Array<{ event: string; payload: Record<string, unknown> }>;
  logs: LogLine[];
  /** Every job of `name` in the store, oldest fire time first. */
  jobs(name?: string): Promise<JobRecord[]>;
  /** Ticks every instance concurrently (their store calls interleave). */
  tickAll(): Promise<void>;
}

/**
 * `instances` schedulers for the given schedules (job name → `schedule` option) on one store.
 * `clocks` gives each instance its clock (default: all share `clock`).
 */
export function cronInstances(options: {
  clock: ManualClock;
  schedules: Record<string, unknown>;
  instances?: number;
  clocks?: Clock[];
  store?: MemoryStore;
  /** What instance `i` sees of the store (e.g. a proxy that delays or fails its calls). */
  wrap?: (store: MemoryStore, instance: number) => JobStore;
}): CronInstances {
  const store = options.store ?? new MemoryStore();
  const count = options.clocks?.length ?? options.instances ?? 1;
  const events: CronInstances['events'] = [];
  const logs: LogLine[] = [];
  const logger: SchedulerLogger = {
    info: (fields, msg) => logs.push({ level: 'info', fields, msg }),
    warn: (fields, msg) => logs.push({ level: 'warn', fields, msg }),
    error: (fields, msg) => logs.push({ level: 'error', fields, msg }),
  };
  const schedules: ScheduledJob[] = Object.entries(options.schedules).map(([jobName, spec]) => ({
    jobName,
    className: `${jobName}Job`,
    schedule: compileSchedule(`${jobName}Job`, spec),
  }));
  const schedulers: Scheduler[] = [];
  const controls: ScheduleControl[] = [];
  for (let i = 0; i < count; i++) {
    const clock = options.clocks?.[i] ?? options.clock;
    const seen = options.wrap?.(store, i) ?? store;
    schedulers.push(
      new Scheduler({
        store: seen,
        clock,
        logger,
        emit: (event, payload) => events.push({ event, payload: payload as unknown as Record<string, unknown> }),
        schedules,
        enqueueFire: async (jobName, fireAt, payload) => {
          const [result] = await seen.enqueue(
            [
              {
                name: jobName,
                queue: 'default',
                payload,
                priority: 0,
                runAt: fireAt,
                maxAttempts: 1,
                idempotencyKey: cronIdempotencyKey(jobName, fireAt),
                scheduledFor: fireAt,
              },
            ],
            { now: clock.now() },
          );
          return result;
        },
      }),
    );
    const enqueueTrigger = async (jobName: string, at: Date, payload: unknown) => {
      const [result] = await store.enqueue(
        [
          {
            name: jobName,
            queue: 'default',
            payload,
            priority: 0,
            runAt: at,
            maxAttempts: 1,
            idempotencyKey: triggerIdempotencyKey(jobName, at),
            scheduledFor: at,
          },
        ],
        { now: at },
      );
      return result;
    };
    controls.push(new ScheduleControl({ store, clock, schedules, enqueueTrigger }));
  }
  return {
    store,
    schedulers,
    controls,
    events,
    logs,
    async jobs(name) {
      const jobs = await store.listJobs({ name, status: ['queued', 'running', 'waiting', 'completed'] });
      return jobs.sort((a, b) => (a.scheduledFor?.getTime() ?? 0) - (b.scheduledFor?.getTime() ?? 0));
    },
    async tickAll() {
      await Promise.all(schedulers.map((scheduler) => scheduler.tick()));
    },
  };
}

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
