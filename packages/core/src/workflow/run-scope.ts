import type { Clock } from '../support/clock.js';
import type { EnqueueOptions } from '../store/enqueue-options.js';
import type { EnqueueResult } from '../store/job-record.js';
import type { JobDefinition } from '../jobs/job-definition.js';
import type { LeaseRef, StepKind, StepRecord } from '../store/job-record.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import type { Logger } from '../support/logger.js';
import type { JobStore } from '../store/store.js';
import type { RunSuspension } from './run-suspension.js';
import type { StepBudget } from './step-limits.js';
import type { StepLog } from './step-log.js';
import type { WaitOutcomes } from './step-outcome.js';
import type { WaitTokenLinkOptions } from '../support/token-links.js';

/** How workflows enqueue a child job: the engine's `Enqueuer` is one. */
export interface ChildEnqueuer {
  /** Validates and stores a job of `def` (payload, keys, flow), `parentId` its parent. */
  enqueueDefinition(def: JobDefinition, payload: unknown, opts: EnqueueOptions, extras: { parentId: string }): Promise<EnqueueResult>;
}

/** Engine services workflows need beyond the store: built once per engine, shared by every run. */
export interface WorkflowServices {
  enqueuer: ChildEnqueuer;
  registry: JobRegistry;
  /** Tells this engine's workers that a job became claimable (woken, signalled, released). */
  wakeWorkers: () => void;
  /** Where wait-token links point and how they are signed (`Loom.create({ waitTokens })`); absent: tokens have no `url`. */
  waitTokenLinks?: WaitTokenLinkOptions;
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
