import type { Clock } from './clock.js';
import { StoreTimeoutError } from './errors.js';

/**
 * Waits for a store call for at most `ms` of the clock's time, so a store that hangs (rather than
 * failing) cannot wedge the worker loop or a run. `onLate` receives the result if it arrives after
 * the deadline (e.g. to release jobs a late claim leased).
 */
export function withDeadline<T>(clock: Pick<Clock, 'setTimer'>, operation: string, ms: number, call: Promise<T>, onLate?: (value: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timedOut = false;
    const cancel = clock.setTimer(() => {
      timedOut = true;
      reject(new StoreTimeoutError(operation, ms));
    }, ms);
    call.then(
      (value) => {
        cancel();
        if (timedOut) onLate?.(value);
        else resolve(value);
      },
      (err: unknown) => {
        cancel();
        if (!timedOut) reject(err);
      },
    );
  });
}
