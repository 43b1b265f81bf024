import type { Clock } from '../support/clock.js';
import type { Enqueuer } from '../engine/enqueuer.js';
import { InvalidJobOptionsError, LoomError } from '../support/errors.js';
import type { EventBus, LoomEventMap } from '../engine/events.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import type { Logger } from '../support/logger.js';
import { checkPayload } from '../engine/payload-check.js';
import type { JobStore } from '../store/store.js';
import { ScheduleControl } from './schedule-control.js';
import { compileSchedule } from './schedule-options.js';
import { Scheduler, type ScheduledJob } from './scheduler.js';

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
}): Scheduling {
  const schedules: ScheduledJob[] = deps.registry
    .all()
    .filter((def) => def.schedule !== undefined)
    .map((def) => {
      const schedule = compileSchedule(def.className, def.schedule);
      try {
        checkPayload(def, schedule.payload);
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
  });
  // A finished cron run may unblock the next slot (overlap 'skip'): look at once rather than at the
  // next regular wake-up. Runs finished by other instances are seen at that wake-up.
  const scheduled = new Set(schedules.map((s) => s.jobName));
  const onFinished = ({ job }: { job: { name: string; scheduledFor?: Date } }): void => {
    if (job.scheduledFor !== undefined && scheduled.has(job.name)) scheduler.wake();
  };
  events.on('job:completed', onFinished);
  events.on('job:dead', onFinished);
  return {
    start: () => scheduler.start(),
    stop: () => scheduler.stop(),
    control: new ScheduleControl({ store, clock, schedules }),
  };
}
