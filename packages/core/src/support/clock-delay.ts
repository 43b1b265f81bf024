import type { Clock } from './clock.js';

/** Resolves once `ms` of the clock's time has passed (a FakeClock must be advanced). */
export function clockDelay(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimer(resolve, ms));
}
