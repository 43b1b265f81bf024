import { AsyncLocalStorage } from 'node:async_hooks';
import { InvalidArgumentError } from '../support/errors.js';
import type { StepKind } from '../store/job-record.js';

interface InsideStep {
  run: object;
  step: string;
}

const insideStep = new AsyncLocalStorage<InsideStep>();

const METHOD: Record<StepKind, string> = { step: 'step', sleep: 'sleep', enqueue: 'enqueue', signal: 'waitForSignal', wait: 'waitForJob' };

/**
 * Keeps workflow calls out of step functions. A step called inside another step would be recorded
 * on the first attempt and skipped on replay (the outer step's result is replayed without calling
 * its function), so the run would meet its history out of order; refusing it up front is clearer.
 * Tracked per run through async context, so parallel steps (`Promise.all`) are not mistaken for
 * nested ones.
 */
export const stepNesting = {
  /** Calls `fn` as the body of step `step` of `run`. */
  run<T>(run: object, step: string, fn: () => T | Promise<T>): Promise<T> {
    return insideStep.run({ run, step }, async () => fn());
  },

  /** Throws `INVALID_ARGUMENT` when called from inside a step function of `run`. */
  assertOutside(run: object, kind: StepKind, name: string): void {
    const outer = insideStep.getStore();
    if (outer?.run !== run) return;
    throw new InvalidArgumentError(
      `ctx.${METHOD[kind]}("${name}")`,
      `it was called inside the function of step "${outer.step}"; steps cannot nest: call ctx methods from run(), between steps`,
    );
  },
};
