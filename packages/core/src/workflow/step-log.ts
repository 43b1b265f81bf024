import { DuplicateStepError, NonDeterminismError, StepOrderError } from '../support/errors.js';
import type { StepKind, StepRecord } from '../store/job-record.js';

/** A step as a {@link StepOrderError} names it. */
export interface StepRef {
  name: string;
  kind: StepKind;
}

/**
 * One run's view of the job's step history: checks every step the run reaches against what
 * earlier attempts recorded, and numbers the steps in the order the run reaches them.
 *
 * Steps are numbered when they are *called* (`seq`), not when they finish, so steps run in
 * parallel (`Promise.all`) keep stable numbers. A replay fails with a `NonDeterminismError` when
 * a name was recorded under another kind, or when the step recorded at this position has another
 * name (or this name was recorded at another position).
 */
export class StepLog {
  private readonly byName = new Map<string, StepRecord>();
  private readonly bySeq = new Map<number, StepRecord>();
  private readonly reached = new Map<string, number>();
  private readonly ordinals = new Map<string, number>();
  private nextSeq = 0;

  constructor(
    private readonly jobId: string,
    history: readonly StepRecord[],
  ) {
    for (const step of history) {
      this.byName.set(step.name, step);
      if (typeof step.seq === 'number') this.bySeq.set(step.seq, step);
    }
  }

  /**
   * Marks `name` as reached by this run and returns its record from earlier attempts, if any.
   * Throws `DUPLICATE_STEP` for a name reached twice and `NON_DETERMINISM` for a divergence.
   */
  reach(name: string, kind: StepKind): StepRecord | undefined {
    if (this.reached.has(name)) throw new DuplicateStepError(this.jobId, name);
    const seq = this.nextSeq++;
    this.reached.set(name, seq);
    const recorded = this.byName.get(name);
    if (recorded && recorded.kind !== kind) throw new NonDeterminismError(this.jobId, name, recorded.kind, kind);
    const atPosition = this.bySeq.get(seq);
    if (atPosition && atPosition.name !== name) throw new StepOrderError(this.jobId, seq, atPosition, { name, kind });
    if (recorded?.seq !== undefined && recorded.seq !== seq) throw new StepOrderError(this.jobId, seq, undefined, { name, kind }, recorded.seq);
    return recorded;
  }

  /**
   * Marks the marker `name` (a `ctx.patched` decision) as reached, without taking a position: code
   * that adds a marker must not shift the positions of the steps after it, which runs started
   * under the old code recorded. Returns its record from earlier attempts, if any, and whether an
   * earlier attempt reached a step at or after this point (a position not below the next one):
   * such a run went past this point under code that had no marker here.
   */
  reachMarker(name: string): { recorded: StepRecord | undefined; passedBefore: boolean } {
    if (this.reached.has(name)) throw new DuplicateStepError(this.jobId, name);
    this.reached.set(name, -1);
    let passedBefore = false;
    for (const seq of this.bySeq.keys()) if (seq >= this.nextSeq) passedBefore = true;
    return { recorded: this.byName.get(name), passedBefore };
  }

  /** A copy of `step` carrying the position at which this run reached it. */
  stamp(step: StepRecord): StepRecord {
    const seq = this.reached.get(step.name);
    // Markers (seq -1) have no position: see reachMarker.
    return seq === undefined || seq < 0 ? step : { ...step, seq };
  }

  /**
   * A default step name: `<prefix>#<n>`, where n counts this run's calls with that prefix from 1.
   * Stable across attempts as long as the handler makes the same calls in the same order.
   */
  nextName(prefix: string): string {
    const n = (this.ordinals.get(prefix) ?? 0) + 1;
    this.ordinals.set(prefix, n);
    return `${prefix}#${n}`;
  }
}
