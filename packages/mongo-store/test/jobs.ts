import type { NewJob } from '@loom/core';

/** The fixed instant the store tests measure time from (the store never reads the wall clock). */
export const T0 = new Date('2026-01-01T00:00:00.000Z');
export const at = (ms: number): Date => new Date(T0.getTime() + ms);

/** A due `send` job in queue `default`. */
export function newJob(overrides: Partial<NewJob> = {}): NewJob {
  return { name: 'send', queue: 'default', payload: { n: 1 }, priority: 0, runAt: T0, maxAttempts: 3, ...overrides };
}

/** A claim request for one `send` job with a 30 s lease. */
export function claimRequest(owner = 'worker-a', now = at(1), limit = 1) {
  return { owner, queues: ['default'], names: ['send'], limit, leaseUntil: new Date(now.getTime() + 30_000), now };
}
