import { InvalidArgumentError } from '../support/errors.js';
import type { RunScope } from './run-scope.js';

/** The prefix of the marker step a `ctx.patched(changeId)` decision is recorded as. */
export const PATCH_STEP_PREFIX = 'patched:';

/**
 * `ctx.patched(changeId)`: whether this run takes the code of a change made while runs were in
 * flight. True for a run that reaches this point first under code that has the call; false for a
 * run that had gone past it before (an earlier attempt recorded a step at or after this position,
 * under code without the call). The answer is recorded with the run (a completed marker step named
 * `patched:<changeId>`, holding no position, so adding the call shifts no later step), and every
 * later attempt gets the same answer, whatever code it runs.
 *
 * Why this works without replaying history as Temporal does: Loom's steps are memoized by name and
 * numbered by the order a run calls them, so "had this run passed this point?" is "did it record a
 * step numbered at or after the next number?".
 */
export async function patched(run: RunScope, changeId: string): Promise<boolean> {
  if (typeof changeId !== 'string' || changeId.trim() === '') throw new InvalidArgumentError('ctx.patched changeId', 'must be a non-empty string');
  const name = `${PATCH_STEP_PREFIX}${changeId}`;
  const { recorded, passedBefore } = run.steps.reachMarker(name);
  if (recorded?.status === 'completed') return recorded.result === true;
  await run.moveOn();
  const stored = await run.record({ name, kind: 'step', status: 'completed', result: !passedBefore, at: run.clock.now() });
  // First write wins: a concurrent run that recorded it first decides.
  return stored.result === true;
}
