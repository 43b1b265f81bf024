/**
 * Server fail points, as mongod's test commands expose them (`configureFailPoint`): a named
 * switch with a mode ("alwaysOn", "off", `{ times: n }`, `{ skip: n }`) and data. A fail point
 * fires only when its owner's condition holds for the operation at hand, and only then does
 * it count against `times`/`skip`, as mongod's `executeIf` does. The fail points themselves
 * (failCommand, onPrimaryTransactionalWrite, failGetMoreAfterCursorCheckout) are evaluated by
 * the code paths they affect.
 */
import { CommandError } from './errors.js';
import { isPlainObject, type Doc } from './values.js';

export const FAIL_POINTS = ['failCommand', 'onPrimaryTransactionalWrite', 'failGetMoreAfterCursorCheckout'] as const;
export type FailPointName = (typeof FAIL_POINTS)[number];

interface FailPointState {
  mode: 'alwaysOn' | 'off' | 'times' | 'skip';
  /** Activations left (times) or evaluations still to let pass (skip). */
  remaining: number;
  data: Doc;
  /** How often it fired since it was last configured (mongod's `count`). */
  timesEntered: number;
}

export class FailPoints {
  private readonly points = new Map<FailPointName, FailPointState>();

  /** `configureFailPoint`: returns the reply mongod gives (`count` = times entered before). */
  configure(name: unknown, mode: unknown, data: unknown): Doc {
    if (typeof name !== 'string' || !(FAIL_POINTS as readonly string[]).includes(name)) {
      throw new CommandError(
        'FailPointSetFailed',
        `Fail point ${String(name)} is not supported by the Loom MongoDB emulator (supported: ${FAIL_POINTS.join(', ')})`,
      );
    }
    const previous = this.points.get(name as FailPointName);
    const state: FailPointState = { mode: 'off', remaining: 0, data: {}, timesEntered: 0 };
    if (mode === 'alwaysOn' || mode === 'off') state.mode = mode;
    else if (isPlainObject(mode) && typeof mode.times === 'number' && mode.times >= 0) {
      state.mode = mode.times > 0 ? 'times' : 'off';
      state.remaining = mode.times;
    } else if (isPlainObject(mode) && typeof mode.skip === 'number' && mode.skip >= 0) {
      state.mode = 'skip';
      state.remaining = mode.skip;
    } else {
      throw new CommandError('BadValue', `fail point mode must be "alwaysOn", "off", { times: n } or { skip: n }, got ${JSON.stringify(mode)}`);
    }
    if (data !== undefined && !isPlainObject(data)) throw new CommandError('TypeMismatch', "fail point 'data' must be an object");
    state.data = (data as Doc | undefined) ?? {};
    this.points.set(name as FailPointName, state);
    return { count: previous?.timesEntered ?? 0, ok: 1 };
  }

  /** True if any fail point is armed (a cheap check for the hot path). */
  get armed(): boolean {
    for (const state of this.points.values()) if (state.mode !== 'off') return true;
    return false;
  }

  /**
   * Fires `name` for an operation `applies` accepts: returns its data (and counts the
   * activation), or undefined when it is off, does not apply, or is still skipping.
   */
  fire(name: FailPointName, applies: (data: Doc) => boolean): Doc | undefined {
    const state = this.points.get(name);
    if (!state || state.mode === 'off' || !applies(state.data)) return undefined;
    if (state.mode === 'skip') {
      if (state.remaining > 0) {
        state.remaining--;
        return undefined;
      }
    } else if (state.mode === 'times') {
      state.remaining--;
      if (state.remaining <= 0) state.mode = 'off';
    }
    state.timesEntered++;
    return state.data;
  }

  clear(): void {
    this.points.clear();
  }
}
