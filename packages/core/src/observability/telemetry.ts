import type { EnqueueResult, JobRecord, NewJob } from '../store/job-record.js';

/**
 * How one attempt ended, as telemetry counts it:
 * - `completed`: its completion is stored;
 * - `failed`: the handler failed and the job will run again;
 * - `dead`: the handler failed and the job went to the dead letters;
 * - `expired`: it went to the dead letters without running, after too many expired leases;
 * - `suspended`: it parked itself (durable sleep or wait) and resumes in a later attempt;
 * - `released`: the engine stopped and gave it back uncounted;
 * - `lost`: no outcome was stored (the lease was lost, or the runner gave up);
 * - `cancelled`: the job was cancelled (`loom.jobs.cancel`) and the run ended it so.
 */
export type AttemptOutcome = 'completed' | 'failed' | 'dead' | 'expired' | 'suspended' | 'released' | 'lost' | 'cancelled';

/** The telemetry of one attempt, from claim to stored outcome. */
export interface RunTelemetry {
  /** Calls `fn(a, b)` with this attempt's span as the active context (the handler's spans nest under it). */
  call<A, B, R>(fn: (a: A, b: B) => R, thisArg: unknown, a: A, b: B): R;
  /** Runs a `ctx.step` body inside a span of its own. */
  step<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /** Ends the attempt's span and counts it. Only the first call counts; later ones are ignored. */
  end(outcome: AttemptOutcome, error?: Error | string): void;
}

/** What the engine reports to OpenTelemetry (see observability/otel-telemetry.ts), or nothing. */
export interface Telemetry {
  /**
   * Calls `store` (which writes `jobs`) inside a `publish <queue>` span, after stamping each job
   * with the span's trace context. `batch`: an `enqueueMany`, whose runs link to the span.
   */
  publish(def: { name: string; queue: string }, jobs: NewJob[], batch: boolean, store: () => Promise<EnqueueResult[]>): Promise<EnqueueResult[]>;
  /** Starts the telemetry of one attempt of a job just claimed. */
  startRun(job: JobRecord): RunTelemetry;
  /** The engine started: report queue depths from now on. */
  start(): void;
  /** The engine stopped: stop reporting queue depths. */
  stop(): void;
}

/** An attempt nothing is reported about. */
export const NOOP_RUN: RunTelemetry = {
  call: (fn, thisArg, a, b) => fn.call(thisArg, a, b),
  step: (_name, fn) => fn(),
  end: () => {},
};

/** Telemetry when `@opentelemetry/api` is not installed: nothing is allocated or recorded. */
export const NOOP_TELEMETRY: Telemetry = {
  publish: (_def, _jobs, _batch, store) => store(),
  startRun: () => NOOP_RUN,
  start: () => {},
  stop: () => {},
};
