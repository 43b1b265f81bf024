import type { ObjectId } from 'mongodb';
import { fencedFilter as fenceOf, type FenceConditions } from '../src/schema/filters.js';

/**
 * `fencedFilter` for a write that holds the lease and that a requested cancel refuses (a row of
 * `LIFECYCLE` with fence `lease`, here `recordStep`): filters.test.ts's cases of the fence, which
 * predate the transition name every write now gives it. fence.test.ts checks the rows themselves.
 */
export function fencedFilter(id: ObjectId, token: unknown, conditions?: FenceConditions) {
  return fenceOf('recordStep', id, token, conditions);
}
