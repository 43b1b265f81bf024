import type { Clock } from '../support/clock.js';
import type { Enqueuer } from '../engine/enqueuer.js';
import type { LeaseRef, StepKind, StepRecord } from '../store/job-record.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import type { Logger } from '../support/logger.js';
import type { JobStore } from '../store/store.js';
import type { RunSuspension } from '../engine/suspension.js';
import type { StepBudget } from './step-limits.js';
import type { StepLog } from './step-log.js';
import type { WaitOutcomes } from './step-outcome.js';

/** Engine services workflows need beyond the store: built once per engine, shared by every run. */
export interface WorkflowServices {
  enqueuer: Enqueuer;
  registry: JobRegistry;
  /** Tells this engine's workers that a job became claimable (woken, signalled, released). */
  wakeWorkers(): void;
}

/** What the workflow operations (child jobs, waits, signals) use of one run. */
export interface RunScope {
  readonly jobId: string;
  readonly attempt: number;
  readonly lease: LeaseRef;
  readonly store: JobStore;
  readonly clock: Clock;
  readonly log: Logger;
  readonly services: WorkflowServices;
  readonly steps: StepLog;
  /** Checks new step results: plain data, per-step and per-job size caps. */
  readonly budget: StepBudget;
  /** Records wait outcomes; failures become final only once the run moves on. */
  readonly outcomes: WaitOutcomes;
  /** Checks and marks a step name as reached (see `StepLog.reach`); throws a pending suspension. */
  reach(name: string, kind: StepKind): StepRecord | undefined;
  /** After `reach`, before any side effect: makes wait failures the run caught final. */
  moveOn(): Promise<void>;
  /** Records a step (stamped with its position), fenced; first completed write wins. Returns what is stored. */
  record(step: StepRecord): Promise<StepRecord>;
  /** Ends the run through the runner's suspend path. */
  suspend(suspension: RunSuspension): never;
}
