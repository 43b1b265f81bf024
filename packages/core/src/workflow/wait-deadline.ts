import { toMs, type Duration } from '../support/duration.js';
import { InvalidArgumentError } from '../support/errors.js';
import type { StepRecord } from '../store/job-record.js';

/**
 * The instant a wait gives up: fixed the first time the run reaches the wait (kept as the pending
 * step's `wakeAt`), so replays do not push it back. Undefined when there is no timeout.
 */
export function waitDeadline(what: string, timeout: Duration | undefined, recorded: StepRecord | undefined, now: Date): Date | undefined {
  if (timeout === undefined) return recorded?.wakeAt;
  let ms: number;
  try {
    ms = toMs(timeout);
  } catch (err) {
    throw new InvalidArgumentError(`${what} timeout`, (err as Error).message);
  }
  return recorded?.wakeAt ?? new Date(now.getTime() + ms);
}
