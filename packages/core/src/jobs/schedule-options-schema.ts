import { z } from 'zod';

// The `schedule` option as users write it, beside the other `@Job` options (job-options.ts): the
// cron module (cron/schedule-options.ts) compiles it into fire times.

/** What to do with fire times that passed while no engine was running (or the clock jumped). */
export type CatchUpPolicy = 'latest' | 'all' | 'none';
/** What to do with a fire time while the previous run of the schedule has not finished. */
export type OverlapPolicy = 'allow' | 'skip';

/**
 * The `schedule` option of `@Job`: a cron expression (5 fields, or 6 with seconds first), or an
 * object with the expression and its policies.
 */
export const scheduleOptionsSchema = z.union([
  z.string(),
  z.strictObject({
    cron: z.string(),
    /** IANA time zone the expression is read in. Default `'UTC'` (never the host's zone). */
    timezone: z.string().optional(),
    /** The payload every run receives (validated like any payload by the engine). */
    payload: z.unknown().optional(),
    catchUp: z.enum(['latest', 'all', 'none']).optional(),
    overlap: z.enum(['allow', 'skip']).optional(),
  }),
]);

/** The `schedule` option as users write it. */
export type ScheduleOptions = z.infer<typeof scheduleOptionsSchema>;
