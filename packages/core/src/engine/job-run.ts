import type { Clock } from '../support/clock.js';
import { CancelledError, EngineStoppedError, JobTimeoutError, type LeaseLostError } from '../support/errors.js';
import type { JobHandler } from '../jobs/job-class.js';
import type { JobDefinition } from '../jobs/job-definition.js';
import type { JobRecord } from '../store/job-record.js';
import { LazyAbort, type ShutdownSignal } from '../support/lazy-abort.js';
import { LazyChildLogger } from '../support/lazy-child-logger.js';
import type { LogBuffer } from './log-tail.js';
import { RunLease, type RunLeaseDeps, type RunLeaseOwner } from './lease.js';
import { RunEnds } from './run-ends.js';
import type { JobEventInfo } from './events.js';
import type { RunContext } from './run-context.js';
import type { RunSuspension } from '../workflow/run-suspension.js';
import { NOOP_RUN, type RunTelemetry } from '../observability/telemetry.js';
import { toError } from '../support/to-error.js';

/** One settled promise to chain the handler's call on, rather than a new one per run. */
const RESOLVED = Promise.resolve();

/** How a handler invocation ended: classes, not literals, since an outcome holds its run's result (see support/plain-constructor.ts). */
export type Outcome = Returned | Threw | Suspended | typeof RELEASED;

class Returned {
  readonly kind = 'returned';
  constructor(readonly result: unknown) {}
}

class Threw {
  readonly kind = 'threw';
  constructor(readonly error: Error) {}
}

class Suspended {
  readonly kind = 'suspended';
  constructor(readonly suspension: RunSuspension) {}
}

/** The shutdown grace ended while the handler ran: the job goes back to the queue. */
const RELEASED = Object.freeze({ kind: 'released' as const });

/** What a run asks of its runner: the run's log buffer, the handler's call, and the steps after the handler. */
export interface RunSteps {
  /** Makes the buffer of the run's kept `ctx.log` lines (on the handler's first line). */
  logBuffer(run: JobRun): LogBuffer;
  /** Calls the handler (or joins its batch call): its value or promise. */
  callHandler(run: JobRun, instance: JobHandler, payload: unknown): unknown;
  /** The outcome is decided ({@link JobRun.outcome}): store it. */
  afterHandler(run: JobRun): void;
}

/**
 * One run of a claimed job, from its claim to its stored outcome: what the runner knows of it
 * (job, definition, lease, logger, span, context), its cancel, its two ends as the worker pool
 * sees them ({@link RunEnds}), and the race of its handler against its timeout and the engine's
 * shutdown grace. One object with methods rather than an async function with closures: the run's
 * cancel, ends, lease callbacks, log tail and handler race were a dozen small objects and
 * closures per run, about half of what a no-op job allocated (bench/README.md, "Issue 33 items
 * 2/3: one object per run (7 December)"). The runner ({@link RunSteps}) decides what happens
 * at each step; this class holds the state the steps share.
 */
export class JobRun extends RunEnds implements RunLeaseOwner {
  readonly log: LazyChildLogger;
  /** `ctx.signal`'s controller: aborted by a cancel, a lost lease, the timeout or the shutdown grace. */
  readonly abort = new LazyAbort();
  readonly lease: RunLease;
  /** Set by {@link started} (a run of a job this engine does not know never gets them). */
  def!: JobDefinition;
  info!: JobEventInfo;
  /** The attempt's span and metrics: ended with the outcome once it is stored (none before {@link started}). */
  telemetry: RunTelemetry = NOOP_RUN;
  ctx!: RunContext;
  /** When the handler was called (ms of the engine's clock). */
  startedAt = 0;
  /** How the handler's call ended; set once, before {@link RunSteps.afterHandler}. */
  outcome!: Outcome;
  /** A cancel was requested: by a heartbeat, a `jobs.cancel` in this process, or a write refused with `CANCELLED`. */
  cancelRequested = false;
  cancelReason: string | undefined;
  /** Why the runner stopped waiting for the handler (its timeout, the shutdown grace), if it did. */
  abandoned: string | undefined;
  /** The payload's estimated size, measured by its check at the start (the completion counts it again). */
  payloadBytes: number | undefined;
  /** The buffer of kept `ctx.log` lines: made on the handler's first line (most runs log nothing). */
  logs: LogBuffer | undefined;
  private logsClosed = false;
  private decided = false;
  private handlerSettled = false;
  private instance: (JobHandler & { abandon?(why: string): void }) | undefined;
  private stopTimeout: (() => void) | undefined;
  private stopShutdown: (() => void) | undefined;

  constructor(
    private readonly steps: RunSteps,
    readonly job: JobRecord,
    leaseDeps: RunLeaseDeps,
    logger: LazyChildLogger,
    onDone: () => void,
  ) {
    super(onDone);
    this.log = logger;
    this.lease = new RunLease(leaseDeps, job, logger, this);
  }

  /** The job is known: its definition, event info and span; heartbeats start. */
  started(def: JobDefinition, info: JobEventInfo, telemetry: RunTelemetry): void {
    this.def = def;
    this.info = info;
    this.telemetry = telemetry;
    this.lease.start();
  }

  /** `jobs.cancel` in this process (the worker pool). */
  cancel(reason?: string): void {
    this.requestCancel(reason);
  }

  /** Records a requested cancel (once) and aborts `ctx.signal`: the run ends cancelled once the handler returns. */
  requestCancel(reason?: string): void {
    if (this.cancelRequested) return;
    this.cancelRequested = true;
    this.cancelReason = reason;
    const { job } = this;
    this.log.info({ jobId: job.id }, `Job ${job.id}: its cancel was requested; aborting ctx.signal (the run ends cancelled once the handler returns)`);
    this.abort.abort(new CancelledError(job.id, reason ?? job.cancelReason));
  }

  leaseLost(error: LeaseLostError): void {
    this.abort.abort(error);
  }

  leaseCancelRequested(): void {
    this.requestCancel();
  }

  /**
   * The log buffer, made on first use. Once the handler's outcome is decided it is closed, so a
   * line logged later (a handler still running after its timeout) is not kept, as by a buffer made before.
   */
  logBuffer(): LogBuffer {
    if (this.logs === undefined) {
      this.logs = this.steps.logBuffer(this);
      if (this.logsClosed) this.logs.discard();
    }
    return this.logs;
  }

  /**
   * Calls the handler, in a microtask (not inside the claim that started this run; its slot is
   * taken until it returns), and races it against `timeoutMs` and the shutdown grace. The first
   * to end decides {@link outcome}; then {@link RunSteps.afterHandler}. A lost lease aborts
   * `ctx.signal` but the run keeps waiting, so the handler's outcome reaches the store and is
   * refused there.
   */
  invoke(instance: JobHandler & { abandon?(why: string): void }, payload: unknown, clock: Clock, shutdown: ShutdownSignal): void {
    this.instance = instance;
    const { timeoutMs } = this.def;
    if (timeoutMs !== undefined) {
      this.stopTimeout = clock.setTimer(() => {
        const error = new JobTimeoutError(this.job.id, timeoutMs);
        this.abort.abort(error);
        // Give the handler a turn to honour the abort before calling it stuck.
        void RESOLVED.then(() => this.abandonHandler(`timed out after ${timeoutMs} ms`, new Threw(error)));
      }, timeoutMs);
    }
    this.stopShutdown = shutdown.onAbort(() => {
      this.abort.abort(new EngineStoppedError(this.job.id));
      void RESOLVED.then(() => this.abandonHandler('the shutdown grace ended', RELEASED));
    });
    this.handlerCalled();
    void RESOLVED.then(() => {
      if (this.decided) return this.returned(undefined);
      let result: unknown;
      try {
        result = this.steps.callHandler(this, instance, payload);
      } catch (err) {
        return this.threw(err);
      }
      // A handler's promise is waited for with one `then` (chaining the call's own promise on
      // it cost two more promises per run); a value or another thenable as before, a turn later.
      const promise = result instanceof Promise ? result : Promise.resolve(result);
      promise.then(
        (value: unknown) => this.returned(value),
        (err: unknown) => this.threw(err),
      );
    });
  }

  private returned(result: unknown): void {
    this.handlerSettled = true;
    this.handlerReturned();
    this.decide(this.suspendedOr(new Returned(result)));
  }

  private threw(err: unknown): void {
    this.handlerSettled = true;
    this.handlerReturned();
    this.decide(this.suspendedOr(new Threw(toError(err))));
  }

  private suspendedOr(other: Outcome): Outcome {
    const { suspension } = this.ctx;
    return suspension ? new Suspended(suspension) : other;
  }

  /**
   * The outcome is decided now; whether the handler ignores the signal is decided once that
   * outcome is stored (the runner's warning), so a handler winding down is not blamed.
   */
  private abandonHandler(why: string, outcome: Outcome): void {
    if (this.decided) return;
    if (!this.handlerSettled) {
      this.abandoned = why;
      // A sandboxed run ends its thread here: nothing of it outlives the outcome.
      this.instance?.abandon?.(why);
    }
    this.decide(outcome);
  }

  private decide(outcome: Outcome): void {
    if (this.decided) return;
    this.decided = true;
    this.stopTimeout?.();
    this.stopShutdown?.();
    this.outcome = outcome;
    // The last lines go with the outcome: the buffer takes no more.
    this.logsClosed = true;
    this.steps.afterHandler(this);
  }
}
