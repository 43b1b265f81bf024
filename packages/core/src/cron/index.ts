export { FireTimes } from './fire-times.js';
export { compileSchedule, type CompiledSchedule } from './schedule-options.js';
export { CATCH_UP_NONE_TOLERANCE_MS, MAX_CATCH_UP_SLOTS, oldestOnly, selectSlots, type MissedSlots, type SlotSelection } from './slot-selection.js';
export { FIRING_RECOVERY_DELAY_MS, Scheduler, cronIdempotencyKey, type ScheduledJob, type SchedulerLogger, type SchedulerOptions } from './scheduler.js';
export { ScheduleControl, resumeSchedule, triggerIdempotencyKey, type ScheduleInfo } from './schedule-control.js';
export { StoredSchedules, type StoredScheduleInfo } from './stored-schedules.js';
export type { ScheduleEventMap, ScheduleEventName } from './schedule-events.js';
