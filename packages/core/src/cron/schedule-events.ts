import type { MissedSlots } from './slot-selection.js';

/**
 * The cron events `loom.on` can listen to. Each is reported once per slot however many engine
 * instances share the store: `schedule:fired` by the instance whose enqueue stored the job, the
 * others by the instance that won the schedule's advance.
 */
export interface ScheduleEventMap {
  /** A fire time's job was enqueued. */
  'schedule:fired': { name: string; fireAt: Date; jobId: string };
  /** A fire time was not run because an earlier run of the schedule has not finished (`overlap: 'skip'`). */
  'schedule:skipped': { name: string; fireAt: Date; reason: 'overlap'; runningJobId: string };
  /** The due fire times in `(after, upTo]` were not run, as the `catchUp` policy says. */
  'schedule:missed': { name: string } & MissedSlots;
}

export type ScheduleEventName = keyof ScheduleEventMap;
