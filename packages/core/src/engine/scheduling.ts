import type { Clock } from '../support/clock.js';
import type { Enqueuer } from './enqueuer.js';
import { InvalidJobOptionsError, LoomError } from '../support/errors.js';
import type { EventBus, LoomEventMap } from './events.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import type { Logger } from '../support/logger.js';
import { checkPayload } from './payload-check.js';
import type { JobStore } from '../store/store.js';
import { payloadLimitsOf } from '../store/payload-limits.js';
import { ScheduleControl, triggerIdempotencyKey } from '../cron/schedule-control.js';
import { compileSchedule } from '../cron/schedule-options.js';
import { Scheduler, type ScheduledJob } from '../cron/scheduler.js';

/** The engine's cron part: started and stopped with the engine; `control` is `loom.schedules`. */
export interface Scheduling {
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly control: ScheduleControl;
}

/**
 * Compiles every job's `schedule` option and checks its `payload` against the job's payload rules,
 * so a bad expression, time zone, policy or payload fails `Loom.create` with an
 * `InvalidJobOptionsError` naming the class. Fires go through `enqueuer.enqueueFire`: idempotency
 * key `cron:<jobName>:<fireAt ISO>`, `scheduledFor = runAt = fireAt`.
 */
export function createScheduling(deps: {
  store: JobStore;
  clock: Clock;
  logger: Logger;
  registry: JobRegistry;
  events: EventBus;
  enqueuer: Enqueuer;
  /** How long a tick waits for one store call: the lease, as for a claim. */
  leaseMs: number;
}): Scheduling {
  const schedules: ScheduledJob[] = deps.registry
    .all()
    .filter((def) => def.schedule !== undefined)
    .map((def) => {
      const schedule = compileSchedule(def.className, def.schedule);
      try {
        checkPayload(def, schedule.payload, '', payloadLimitsOf(deps.store));
      } catch (error) {
        if (!LoomError.is(error, 'INVALID_PAYLOAD')) throw error;
        throw new InvalidJobOptionsError(def.className, 'schedule.payload', `is not a valid payload for this job: ${error.message}`);
      }
      return { jobName: def.name, className: def.className, schedule };
    });
  const { store, clock, logger, events, enqueuer } = deps;
  const scheduler = new Scheduler({
    store,
    clock,
    logger,
    // LoomEventMap extends ScheduleEventMap, which TypeScript cannot relate through the generic key.
    emit: (event, payload) => events.emit(event, payload as LoomEventMap[typeof event]),
    schedules,
    enqueueFire: (jobName, fireAt, payload) => enqueuer.enqueueFire(jobName, fireAt, payload),
    storeDeadlineMs: deps.leaseMs,
  });
  // A finished cron run may unblock the next slot (overlap 'skip'): look at once rather than at the
  // next regular wake-up. Runs finished by other instances are seen at that wake-up.
  const scheduled = new Set(schedules.map((s) => s.jobName));
  const onFinished = ({ job }: { job: { name: string; scheduledFor?: Date } }): void => {
    if (job.scheduledFor !== undefined && scheduled.has(job.name)) scheduler.wake();
  };
  events.on('job:completed', onFinished);
  events.on('job:dead', onFinished);
  events.on('job:cancelled', onFinished);
  const enqueueTrigger = (jobName: string, at: Date, payload: unknown) =>
    enqueuer.enqueueDefinition(deps.registry.byName(jobName)!, payload, { idempotencyKey: triggerIdempotencyKey(jobName, at) }, { scheduledFor: at });
  return {
    start: async () => {
      await describeSchedules(deps, schedules);
      await scheduler.start();
    },
    stop: () => scheduler.stop(),
    control: new ScheduleControl({ store, clock, schedules, enqueueTrigger }),
  };
}

/**
 * Stores what each schedule enqueues, so tools without the job classes (the `loom` command line)
 * can list, resume and trigger it. Best effort: a failure is logged and the scheduler starts anyway.
 */
async function describeSchedules(deps: { store: JobStore; clock: Clock; logger: Logger; registry: JobRegistry }, schedules: ScheduledJob[]): Promise<void> {
  for (const { jobName, schedule } of schedules) {
    const def = deps.registry.byName(jobName)!;
    const description = {
      cron: schedule.cron,
      timezone: schedule.timezone,
      job: { queue: def.queue, payload: schedule.payload, priority: def.priority, maxAttempts: def.maxAttempts },
    };
    try {
      await deps.store.describeSchedule(jobName, description, deps.clock.now());
    } catch (err) {
      deps.logger.warn(
        { err, schedule: jobName },
        `schedule ${jobName}: could not store its description (the loom command line cannot trigger or resume it until the next start)`,
      );
    }
  }
}
