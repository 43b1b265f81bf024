import type { LeaseRef } from '../store/job-record.js';

/**
 * Ends a run without finishing or failing it: thrown by `ctx.sleep` (and, later, waits for signals
 * or child jobs) through the handler. The runner recognises it and calls `commit`, the one fenced
 * store transition that parks the job (e.g. `store.sleep`), which gives the attempt back.
 *
 * A handler that catches it cannot undo it: the context remembers the suspension and the runner
 * commits it whatever the handler does afterwards.
 *
 * @internal The seam for durable waits: build one with a `commit` that calls the store.
 */
export class RunSuspension extends Error {
  constructor(
    /** Why the run parked, for logs and the `job:suspended` event (e.g. `sleep "cool-off"`). */
    readonly reason: string,
    /** The fenced store transition that parks the job. */
    readonly commit: (lease: LeaseRef, now: Date) => Promise<void>,
    /** When the job is expected to run again, if known. */
    readonly until?: Date,
  ) {
    super(`The run suspended (${reason}); this is not a failure. Do not catch it in a handler.`);
    this.name = 'RunSuspension';
  }
}
