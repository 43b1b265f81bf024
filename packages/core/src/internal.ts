/**
 * `@loom/core/internal`: seams that Loom's own packages (`@loom/testing`) and tests drive the
 * engine through. Not part of the documented API: anything here may change in any release.
 *
 * @packageDocumentation
 */
import type { InFlightRun } from './engine/worker-pool.js';
import { engineOf, type Loom } from './loom.js';

export type { InFlightRun };

/** What `@loom/testing` drives an engine with. */
export interface LoomTestHooks {
  /** Claims and starts every due job there is room for. */
  pump(): Promise<void>;
  /** The runs in flight in this engine's worker pool. */
  inFlight(): InFlightRun[];
  /** Moves whenever a claim returns jobs or a run ends. */
  activityCount(): number;
  /** Resolves when the next run ends. */
  nextSettle(): Promise<void>;
}

/** The test hooks of `loom`'s worker pool. */
export function testHooks(loom: Loom): LoomTestHooks {
  const { pool } = engineOf(loom);
  return {
    pump: () => pool.pump(),
    inFlight: () => pool.inFlight(),
    activityCount: () => pool.activityCount,
    nextSettle: () => pool.nextSettle(),
  };
}
