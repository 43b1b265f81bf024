/** What the chaos run's parent and its engine processes agree on. */

/** The job name of the chaos run. */
export const CHAOS_JOB = 'selftest-chaos';

/** The engines' lease: short, so the jobs of the killed engine come back within seconds. */
export const CHAOS_LEASE = '2s';

/** One run that reached its end and recorded its effect. */
export interface ChaosEffect {
  key: string;
  jobId: string;
  attempt: number;
  owner: string;
}

/** The collection of effects, under the run's prefix (so selftest drops it with the rest). */
export const effectsCollection = (prefix: string): string => `${prefix}effects`;
