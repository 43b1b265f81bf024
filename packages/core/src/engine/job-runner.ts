import type { RandomSource } from '../jobs/backoff.js';
import type { StoreOutage } from './store-outage.js';
import { nowMs, type Clock } from '../support/clock.js';
import {
  CancelledError,
  EngineStoppedError,
  InvalidJobClassError,
  JobTimeoutError,
  LoomError,
  OutcomeNotStoredError,
  type RateLimitedError,
} from '../support/errors.js';
import type { FlowControl } from './flow-control.js';
import { jobEventInfo, type EventBus, type JobEventInfo } from './events.js';
import { decideAfterFailure } from './failure-policy.js';
import type { BatchSummary, JobHandler } from '../jobs/job-class.js';
import type { JobDefinition } from '../jobs/job-definition.js';
import { DEFAULT_JOB_LOG_BYTES, DEFAULT_JOB_LOG_LINES, type JobLogLine, type JobRecord } from '../store/job-record.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import { LazyAbort, type ShutdownSignal } from '../support/lazy-abort.js';
import { LazyChildLogger } from '../support/lazy-child-logger.js';
import { LogBuffer, LogTail, type JobLogCaps } from './log-tail.js';
import { afterThisTurn } from '../support/after-this-turn.js';
import { heartbeatInterval, RunLease, type RunLeaseDeps, type WriteResult } from './lease.js';
import { CompletionBatch } from './completion-batch.js';
import { RunEnds } from './run-ends.js';
import { HeartbeatBatch } from './heartbeat-batch.js';
import type { Logger } from '../support/logger.js';
import { checkSizedPayload } from './payload-check.js';
import { findPlainDataProblem } from '../support/plain-data.js';
import { RunContext } from './run-context.js';
import { readBatchSummary } from './batch-summary.js';
import { BatchCalls } from './batch-calls.js';
import type { JobStore } from '../store/store.js';
import { payloadLimitsOf } from '../store/payload-limits.js';
import type { RunSuspension } from '../workflow/run-suspension.js';
import type { WorkflowServices } from '../workflow/run-scope.js';
import { toError } from '../support/to-error.js';
import { toErrorRecord } from '../jobs/error-record.js';
import { completedJobTooLarge } from './outcome-size.js';
import type { RunTelemetry, Telemetry } from '../observability/telemetry.js';
import type { Sandbox } from '../sandbox/sandbox.js';

/** One settled promise to chain the handler's call on, rather than a new one per run. */
const RESOLVED = Promise.resolve();

/** How a handler invocation ended. */
type Outcome =
  { kind: 'returned'; result: unknown } | { kind: 'threw'; error: Error } | { kind: 'suspended'; suspension: RunSuspension } | { kind: 'released' };

/**
 * A requested cancel of one run, however it was learnt: a heartbeat (the store flags the job), a
 * `jobs.cancel` in this process, or an outcome write the store refused with `CANCELLED`.
 */
class RunCancel {
  requested = false;
  reason: string | undefined;
  private onRequest: (() => void) | undefined;

  request(reason?: string): void {
    if (this.requested) return;
    this.requested = true;
    this.reason = reason;
    this.onRequest?.();
  }

  /** `fn` runs at the request (at once if it already came). */
  bind(fn: () => void): void {
    this.onRequest = fn;
    if (this.requested) fn();
  }
}

/** Everything one run needs to write its outcome. */
/** What is left of a run's `ctx.log` lines for its completion to carry, and the buffer to write them otherwise. */
interface RunLogTail {
  rest: { lines: JobLogLine[]; keep: number } | undefined;
  logs: LogBuffer;
}

interface Run {
  job: JobRecord;
  def: JobDefinition;
  info: JobEventInfo;
  lease: RunLease;
  log: Logger;
  /** The attempt's span and metrics: ended with the outcome once it is stored. */
  telemetry: RunTelemetry;
  cancel: RunCancel;
  /** Why the runner stopped waiting for the handler (its timeout, the shutdown grace), if it did. */
  abandoned?: string;
  /** The payload's estimated size, measured by its check at the start (the completion counts it again). */
  payloadBytes?: number;
}

export interface JobRunnerDeps {
  store: JobStore;
  clock: Clock;
  logger: Logger;
  events: EventBus;
  registry: JobRegistry;
  /** Handler instances by job name. */
  instances: ReadonlyMap<string, JobHandler>;
  leaseMs: number;
  random: RandomSource;
  /** What `ctx.enqueue` and the waits need from the engine. */
  workflow: WorkflowServices;
  telemetry: Telemetry;
  /** Flow control: where a `RateLimitedError` is turned into a hold. */
  flow: Pick<FlowControl, 'holdFor' | 'noteHold'>;
  /** The engine's one view of a store outage (see store-outage.ts). */
  outage?: StoreOutage;
  /** Runs `@Job({ sandbox })` jobs in threads (or in-line), when the engine has a sandbox. */
  sandbox?: Sandbox;
  /** How much of its `ctx.log` each job keeps. @default DEFAULT_JOB_LOG_LINES and DEFAULT_JOB_LOG_BYTES */
  jobLogs?: JobLogCaps;
}

/**
 * Runs one claimed job to a stored outcome: checks the payload, calls the handler with a
 * {@link RunContext}, enforces the timeout, and records completion, retry, dead letter, suspension
 * or (at shutdown) release. The run's lease — heartbeats, the outcome write's budget, lost or
 * released — is a {@link RunLease}; a write it reports lost is logged and not counted.
 */
export class JobRunner {
  /** One group commit of completions for every run of this engine. */
  private readonly completions: CompletionBatch;
  /** The shared beat of every run's heartbeats: those due at one instant go as one batch. */
  private readonly heartbeats: HeartbeatBatch;
  /** What every run's lease needs, made once rather than per run. */
  private readonly leaseDeps: RunLeaseDeps;

  /** The open and running calls of batch handlers (`@Job({ batch })`); the worker pool reads their room. */
  readonly batchCalls: BatchCalls;

  constructor(private readonly deps: JobRunnerDeps) {
    this.batchCalls = new BatchCalls({ clock: deps.clock, logger: deps.logger });
    this.completions = new CompletionBatch({ store: deps.store, clock: deps.clock, leaseMs: deps.leaseMs });
    this.heartbeats = new HeartbeatBatch({ store: deps.store, clock: deps.clock, intervalMs: heartbeatInterval(deps.leaseMs) });
    this.leaseDeps = {
      store: deps.store,
      clock: deps.clock,
      events: deps.events,
      leaseMs: deps.leaseMs,
      completions: this.completions,
      heartbeats: this.heartbeats,
      ...(deps.outage ? { outage: deps.outage } : {}),
    };
  }

  /**
   * Runs `job` (as returned by `store.claim`). `shutdown` aborts when the engine's grace is over.
   * `onDone` is called once the outcome is stored and the handler has returned (the slot is free).
   */
  run(job: JobRecord, shutdown: ShutdownSignal, onDone: () => void): RunEnds {
    const cancel = new RunCancel();
    const ends = new RunEnds(onDone, (reason) => cancel.request(reason));
    void this.runClaimed(job, shutdown, cancel, ends);
    return ends;
  }

  /** The whole run, one async function: never rejects (an unexpected failure is logged); `ends` hears when it settles. */
  private async runClaimed(job: JobRecord, shutdown: ShutdownSignal, cancel: RunCancel, ends: RunEnds): Promise<void> {
    const { store, clock, events, registry, instances } = this.deps;
    const log = new LazyChildLogger(this.deps.logger, { jobId: job.id, job: job.name, attempt: job.attempt });
    const controller = new LazyAbort();
    const lease = new RunLease(
      this.leaseDeps,
      job,
      log,
      (err) => controller.abort(err),
      () => cancel.request(),
    );
    let run: Run | undefined;
    let logs: LogBuffer | undefined;
    try {
      cancel.bind(() => {
        log.info({ jobId: job.id }, `Job ${job.id}: its cancel was requested; aborting ctx.signal (the run ends cancelled once the handler returns)`);
        controller.abort(new CancelledError(job.id, cancel.reason ?? job.cancelReason));
      });
      const def = registry.byName(job.name);
      const instance = def?.sandbox && this.deps.sandbox ? this.deps.sandbox.handlerFor(def, job) : instances.get(job.name);
      if (!def || !instance) {
        log.error({}, `Job ${job.id}: claimed a job named "${job.name}" that this engine does not know; releasing it`);
        await lease.write('release', () => store.release(lease.ref, clock.now()));
        return;
      }
      run = { job, def, info: jobEventInfo(job), lease, log, telemetry: this.deps.telemetry.startRun(job), cancel };
      lease.start();
      // Reclaimed after its holder died with the cancel requested: end it, never run it.
      if (job.cancelRequestedAt !== undefined) return await this.endCancelled(run);
      if (job.attempt > job.maxAttempts) return await this.deadLetterAfterLeaseExpiries(run);
      events.emit('job:started', { job: run.info });
      let payload: unknown;
      try {
        const checked = checkSizedPayload(def, job.payload, '', payloadLimitsOf(store));
        payload = checked.value;
        run.payloadBytes = checked.size;
      } catch (err) {
        return await this.fail(run, toError(err));
      }
      let batch: BatchSummary | undefined;
      try {
        if (job.batchCallback !== undefined) batch = await readBatchSummary(store, job.batchCallback.batchId);
      } catch (err) {
        return await this.fail(run, toError(err));
      }
      // The log tail's buffer is made on the handler's first ctx.log line: most runs log nothing.
      // Once the handler returned it is closed, so a line logged later (a handler still running
      // after its timeout) is not kept, as by a buffer made before.
      let logsClosed = false;
      const logBuffer = (): LogBuffer => {
        if (logs === undefined) {
          logs = this.logBuffer(run!);
          if (logsClosed) logs.discard();
        }
        return logs;
      };
      const ctx = new RunContext({
        ...(batch ? { batch } : {}),
        job,
        lease,
        store,
        clock,
        logger: new LogTail(log, logBuffer),
        abort: controller,
        workflow: this.deps.workflow,
        telemetry: run.telemetry,
        events,
        info: run.info,
      });
      const startedAt = nowMs(clock);
      const outcome = await this.invoke(run, instance, payload, ctx, controller, shutdown, ends);
      // The last lines go with the completion (one write); any other outcome writes them first.
      logsClosed = true;
      const drained = logs?.drain();
      const rest = drained instanceof Promise ? await drained : drained;
      const completes = outcome.kind === 'returned' && !ctx.completedInTransaction;
      if (!completes) await logs?.send(rest);
      await this.settle(run, outcome, ctx, startedAt, completes && logs !== undefined ? { rest, logs } : undefined);
      if (ctx.usedWaitTokens && outcome.kind !== 'suspended') await this.endWaitTokens(run);
    } catch (err) {
      this.failedUnexpectedly(job, err);
    } finally {
      try {
        lease.stop();
        // A run that ended unexpectedly leaves no flush timer behind (a no-op after drain).
        logs?.discard();
        // Ends the span of a run whose outcome was not stored (a no-op after a stored one).
        run?.telemetry.end('lost');
      } catch (err) {
        this.failedUnexpectedly(job, err);
      }
      if (run?.abandoned !== undefined) await this.warnIfHandlerIgnoresSignal(run, ends);
      // Whatever happened above, the slot must be given back.
      ends.settle();
    }
  }

  /**
   * The run was abandoned (timeout, shutdown grace) and its outcome is stored: if the handler has
   * still not returned one event-loop turn later, it ignores `ctx.signal`, and a warning names the
   * job. That wait is the handler's fair chance to honour the abort: a handler that rejects after
   * a chain of awaits (cleanup without new I/O) has returned by then, and one winding down through
   * I/O had as long as the engine's own outcome write took. Not clock time: `stop()` resolves, and
   * tests see the warning, without the clock moving past the timeout or the grace.
   */
  private async warnIfHandlerIgnoresSignal(run: Run, ends: RunEnds): Promise<void> {
    await afterThisTurn();
    if (!ends.handlerRunning) return;
    const { job, log, abandoned } = run;
    log.warn(
      { jobId: job.id },
      `Job ${job.id}: ${abandoned}, but its handler ignores ctx.signal and is still running; its worker slot stays taken until it returns`,
    );
  }

  /** The run's kept `ctx.log` lines, written under its lease (best effort: a lost lease or a store error loses only those lines). */
  private logBuffer(run: Run): LogBuffer {
    const { store, clock } = this.deps;
    const { job, lease } = run;
    return new LogBuffer({
      clock,
      caps: this.deps.jobLogs ?? { lines: DEFAULT_JOB_LOG_LINES, bytes: DEFAULT_JOB_LOG_BYTES },
      attempt: job.attempt,
      prior: job.logs,
      write: (lines, keep) => store.appendLogs(lease.ref, lines, clock.now(), keep),
      onError: (err, lines) => run.log.debug({ err, jobId: job.id }, `Job ${job.id}: could not keep ${lines} of its log lines; the run goes on`),
    });
  }

  /**
   * A run that used wait tokens stored its outcome: if that ended the job, its pending tokens end
   * too (`cancelled`), so completing one says the job no longer waits. The store leaves them alone
   * when the job did not end (a retry); a failure here is logged, and the store still refuses to
   * complete such a token later (`settleWaitToken` checks the job).
   */
  private async endWaitTokens(run: Run): Promise<void> {
    try {
      await this.deps.store.endWaitTokens(run.job.id, this.deps.clock.now());
    } catch (err) {
      run.log.warn({ err, jobId: run.job.id }, `Job ${run.job.id}: could not end its pending wait tokens; completing one will still resume nothing`);
    }
  }

  private failedUnexpectedly(job: JobRecord, err: unknown): void {
    const error = toError(err);
    this.deps.logger.error({ err: error, jobId: job.id }, `Job ${job.id}: the runner failed unexpectedly; the job will run again when its lease ends`);
    this.deps.events.emit('worker:error', { error, operation: 'run', jobId: job.id });
  }

  /**
   * Calls the handler. Resolves when it settles, when the timeout fires (even if the handler
   * ignores `ctx.signal`), or when the engine's shutdown grace is over. A lost lease aborts
   * `ctx.signal` but the runner keeps waiting, so the handler's outcome reaches the store and is
   * refused there. `ends` hears when the handler returns: until then it holds the worker slot.
   */
  private invoke(
    run: Run,
    instance: JobHandler & { abandon?(why: string): void },
    payload: unknown,
    ctx: RunContext,
    controller: LazyAbort,
    shutdown: ShutdownSignal,
    ends: RunEnds,
  ): Promise<Outcome> {
    const { job, def } = run;
    return new Promise<Outcome>((resolve) => {
      let done = false;
      let handlerReturned = false;
      const cleanups: Array<() => void> = [];
      const finish = (outcome: Outcome): void => {
        if (done) return;
        done = true;
        for (const cleanup of cleanups) cleanup();
        resolve(outcome);
      };
      // The outcome is decided now; whether the handler ignores the signal is decided once that
      // outcome is stored (warnIfHandlerIgnoresSignal), so a handler winding down is not blamed.
      const abandon = (why: string, outcome: Outcome): void => {
        if (done) return;
        if (!handlerReturned) {
          run.abandoned = why;
          // A sandboxed run ends its thread here: nothing of it outlives the outcome.
          instance.abandon?.(why);
        }
        finish(outcome);
      };
      if (def.timeoutMs !== undefined) {
        const timeoutMs = def.timeoutMs;
        cleanups.push(
          this.deps.clock.setTimer(() => {
            const error = new JobTimeoutError(job.id, timeoutMs);
            controller.abort(error);
            // Give the handler a turn to honour the abort before calling it stuck.
            void Promise.resolve().then(() => abandon(`timed out after ${timeoutMs} ms`, { kind: 'threw', error }));
          }, timeoutMs),
        );
      }
      cleanups.push(
        shutdown.onAbort(() => {
          controller.abort(new EngineStoppedError(job.id));
          void Promise.resolve().then(() => abandon('the shutdown grace ended', { kind: 'released' }));
        }),
      );
      const suspendedOr = (other: Outcome): Outcome => (ctx.suspension ? { kind: 'suspended', suspension: ctx.suspension } : other);
      const returned = (result: unknown): void => {
        handlerReturned = true;
        ends.handlerReturned();
        finish(suspendedOr({ kind: 'returned', result }));
      };
      const threw = (err: unknown): void => {
        handlerReturned = true;
        ends.handlerReturned();
        finish(suspendedOr({ kind: 'threw', error: toError(err) }));
      };
      // Called in a microtask, not inside the claim that started this run; its slot is taken until it returns.
      ends.handlerCalled();
      void RESOLVED.then(() => {
        if (done) return returned(undefined);
        let result: unknown;
        try {
          result = this.callHandler(run, instance, payload, ctx);
        } catch (err) {
          return threw(err);
        }
        // A handler's promise is waited for with one `then` (chaining the call's own promise on
        // it cost two more promises per run); a value or another thenable as before, a turn later.
        if (result instanceof Promise) result.then(returned, threw);
        else Promise.resolve(result).then(returned, threw);
      });
    });
  }

  /** The job's `run`, or — for a batch handler — its place in its name's next `runBatch` call (batch-calls.ts). */
  private callHandler(run: Run, instance: JobHandler, payload: unknown, ctx: RunContext): unknown {
    if (run.def.batch && 'runBatch' in instance) {
      return this.batchCalls.add(run.def, instance, { jobId: run.job.id, payload, attempt: run.job.attempt }, () => ctx.signal);
    }
    if (!('run' in instance)) throw new InvalidJobClassError(run.def.className, 'has no run(payload, ctx) method');
    // eslint-disable-next-line @typescript-eslint/unbound-method -- telemetry.call invokes it with `instance` as `this`
    return run.telemetry.call(instance.run, instance, payload, ctx);
  }

  /** Stores the outcome of a run whose handler has returned (or was abandoned). */
  private settle(run: Run, outcome: Outcome, ctx: RunContext, startedAt: number, tail?: RunLogTail): Promise<void> {
    const { events } = this.deps;
    // A cancel requested while the handler ran discards whatever it came to (unless a
    // ctx.transaction had completed the job before: then the store kept the completion).
    if (run.cancel.requested && !ctx.completedInTransaction) return this.endCancelled(run);
    switch (outcome.kind) {
      case 'released':
        return this.released(run);
      case 'suspended':
        return this.suspended(run, outcome.suspension);
      case 'threw':
        if (!ctx.completedInTransaction) {
          if (LoomError.is(outcome.error, 'RATE_LIMITED')) return this.rateLimited(run, outcome.error as RateLimitedError);
          return this.fail(run, outcome.error);
        }
        run.log.warn({ err: outcome.error }, `Job ${run.info.id}: the handler threw after ctx.transaction completed the job; it stays completed`);
        run.telemetry.end('completed');
        events.emit('job:completed', { job: run.info, result: undefined, durationMs: this.since(startedAt) });
        return Promise.resolve();
      case 'returned':
        if (ctx.completedInTransaction) {
          run.telemetry.end('completed');
          events.emit('job:completed', { job: run.info, result: undefined, durationMs: this.since(startedAt) });
          return Promise.resolve();
        }
        return this.complete(run, outcome.result, ctx, startedAt, tail);
    }
  }

  /** The handler returned `returned`: the job's completion, group-committed with other runs' by the lease. */
  private complete(run: Run, returned: unknown, ctx: RunContext, startedAt: number, tail?: RunLogTail): Promise<void> {
    const steps = ctx.finishSteps();
    if (steps) return steps.then(() => this.storeCompletion(run, returned, ctx, startedAt, tail));
    return this.storeCompletion(run, returned, ctx, startedAt, tail);
  }

  /**
   * Stores the completion once the handler's steps are final. Not an async function: its frame,
   * kept across the store's write, was about 1 KB per run (bench/README.md, "Issue 33 items 2/3:
   * pretenuring, one map of jobs (7 December)"); a completion that is not stored goes on in
   * {@link completionNotStored}.
   */
  private storeCompletion(run: Run, returned: unknown, ctx: RunContext, startedAt: number, tail?: RunLogTail): Promise<void> {
    const { lease, log, info } = run;
    let result = returned;
    const limits = payloadLimitsOf(this.deps.store);
    // Over the store's maxPayloadSize a result is not stored, as one that is not plain data.
    const problem = result === undefined ? null : findPlainDataProblem(result, limits.maxPayloadSize);
    if (problem) {
      log.warn(
        { path: problem.path },
        `Job ${info.id}: the handler's return value is not plain data at ${problem.path || '(root)'} (${problem.reason}); the job completes without a stored result`,
      );
      result = undefined;
    }
    const tooLarge = completedJobTooLarge(run.job, ctx.stepBytesAdded, result, limits, run.payloadBytes);
    if (tooLarge) return this.failTooLarge(run, tooLarge, tail);
    // Lines of a completion the store refuses (lease lost, cancel requested) are not kept.
    return lease.complete(result, tail?.rest).then((written) => {
      if (written.kind !== 'written') return this.completionNotStored(run, written);
      run.telemetry.end('completed');
      this.deps.events.emit('job:completed', { job: info, result, durationMs: this.since(startedAt) });
    });
  }

  /** The completed job would pass the store's size limits: its last log lines are sent, and the attempt fails. */
  private async failTooLarge(run: Run, tooLarge: Error, tail?: RunLogTail): Promise<void> {
    await tail?.logs.send(tail.rest);
    return this.fail(run, tooLarge);
  }

  /** The store did not take the completion: its cancel was requested, or it refused it. */
  private async completionNotStored(run: Run, written: Exclude<WriteResult, { kind: 'written' }>): Promise<void> {
    if (written.kind === 'cancelled') await this.cancelRefused(run);
    else if (written.kind === 'refused') await this.fail(run, new OutcomeNotStoredError(run.info.id, 'complete', written.error));
  }

  /** The shutdown grace ended while the handler ran: the job goes back to the queue, attempt not counted. */
  private async released(run: Run): Promise<void> {
    const { store, clock } = this.deps;
    const { lease } = run;
    if ((await this.write(run, 'release', () => store.release(lease.ref, clock.now()))).kind !== 'written') return;
    run.log.warn({}, `Job ${run.info.id}: still running when the shutdown grace ended; released for another worker (attempt not counted)`);
    run.telemetry.end('released');
  }

  /** The run parked itself (a durable sleep or wait). */
  private async suspended(run: Run, suspension: RunSuspension): Promise<void> {
    const { lease, info } = run;
    if ((await this.write(run, 'suspend', () => suspension.commit(lease.ref, this.deps.clock.now()))).kind !== 'written') return;
    run.log.debug({ until: suspension.until }, `Job ${info.id}: suspended (${suspension.reason})`);
    run.telemetry.end('suspended');
    this.deps.events.emit(
      'job:suspended',
      suspension.until ? { job: info, reason: suspension.reason, until: suspension.until } : { job: info, reason: suspension.reason },
    );
  }

  /** Milliseconds of the engine's clock since `startedAt` (ms). */
  private since(startedAt: number): number {
    return nowMs(this.deps.clock) - startedAt;
  }

  /**
   * The handler threw `RateLimitedError`: the name (or rate-limit key) is held in the store for the
   * duration, so no instance starts it, and the job goes back to the queue until then with its
   * attempt given back. Should the hold not be stored, the job still goes back (the others then
   * learn nothing, but no attempt is lost).
   */
  private async rateLimited(run: Run, error: RateLimitedError): Promise<void> {
    const { store, clock, events, flow } = this.deps;
    const { job, def, lease, log, info } = run;
    const now = clock.now();
    const hold = flow.holdFor(job, def, error.retryAfterMs, now);
    const held = await lease.write('hold', () => store.holdFlow({ ...hold, now: clock.now() }));
    if (held.kind === 'lost') return;
    if (held.kind === 'written') flow.noteHold(hold);
    if ((await lease.write('sleep', () => store.sleep(lease.ref, { runAt: hold.until, now: clock.now() }))).kind !== 'written') return;
    const what = hold.key === undefined ? `job "${job.name}"` : `rate-limit key "${hold.key}" of job "${job.name}"`;
    log.info(
      { until: hold.until },
      `Job ${job.id}: rate limited (${error.message}); no ${what} starts until ${hold.until.toISOString()}, and this job runs again then (attempt not counted)`,
    );
    events.emit('job:suspended', { job: info, reason: 'rate limited', until: hold.until });
  }

  /** Records a failed attempt: a retry after backoff, or the dead letters (permanent or out of attempts). */
  private async fail(run: Run, error: Error): Promise<void> {
    const { store, clock, events, random } = this.deps;
    const { job, def, lease, log, info } = run;
    const now = clock.now();
    const record = toErrorRecord(error, lifetimeAttempt(job), now);
    const decision = decideAfterFailure(def, job.attempt, job.maxAttempts, error, record.message, random, (err) =>
      log.error({ err }, `Job ${job.id}: the job's backoff function failed; used the default backoff instead`),
    );
    if (decision.kind === 'retry') {
      const runAt = new Date(now.getTime() + decision.delayMs);
      if ((await this.write(run, 'retry', () => store.retry(lease.ref, { runAt, error: record, now: clock.now() }))).kind !== 'written') return;
      log.warn(
        { err: error, runAt },
        `Job ${job.id}: attempt ${job.attempt} of ${job.maxAttempts} failed (${record.message}); retrying in ${decision.delayMs} ms`,
      );
      run.telemetry.end('failed', error);
      events.emit('job:failed', { job: info, error, willRetry: true });
      events.emit('job:retrying', { job: info, error, runAt, delayMs: decision.delayMs });
      return;
    }
    if (
      (await this.write(run, 'dead-letter', () => store.deadLetter(lease.ref, { reason: decision.reason, error: record, now: clock.now() }))).kind !== 'written'
    )
      return;
    log.error({ err: error, event: 'job:dead' }, `Job ${job.id}: moved to the dead letters: ${decision.reason}`);
    run.telemetry.end('dead', error);
    events.emit('job:failed', { job: info, error, willRetry: false });
    events.emit('job:dead', { job: info, reason: decision.reason, error });
  }

  /**
   * A job claimed beyond its attempts got there by reclaims after expired leases: it crashed or
   * stalled its worker every time. Running it again would loop forever, so it goes to the dead letters.
   */
  private async deadLetterAfterLeaseExpiries(run: Run): Promise<void> {
    const { job, lease, log, info } = run;
    const now = this.deps.clock.now();
    const thisRound = job.errors.filter((e) => e.attempt > (job.priorAttempts ?? 0)).length;
    const expiries = Math.max(1, job.attempt - 1 - thisRound);
    const reason = `lease expired ${expiries} time${expiries === 1 ? '' : 's'}: the job crashed or stalled its worker (attempt ${job.attempt} exceeds ${job.maxAttempts})`;
    const error = { attempt: lifetimeAttempt(job), at: now, name: 'LeaseExpired', message: reason, code: 'LEASE_LOST' };
    if ((await this.write(run, 'dead-letter', () => this.deps.store.deadLetter(lease.ref, { reason, error, now: this.deps.clock.now() }))).kind !== 'written')
      return;
    log.error({ event: 'job:dead' }, `Job ${job.id}: moved to the dead letters: ${reason}`);
    run.telemetry.end('expired', reason);
    this.deps.events.emit('job:dead', { job: info, reason });
  }

  /** An outcome write through the run's lease; refused because the job's cancel was requested, it ends the job cancelled. */
  private async write(run: Run, op: string, fn: () => Promise<unknown>): Promise<WriteResult> {
    const written = await run.lease.write(op, fn);
    if (written.kind === 'cancelled') await this.cancelRefused(run);
    return written;
  }

  /** The store refused an outcome write because the job's cancel was requested: the run ends the job cancelled. */
  private cancelRefused(run: Run): Promise<void> {
    run.cancel.request();
    return this.endCancelled(run);
  }

  /** `running → cancelled` with this run's lease (the handler has returned, or never ran), then `job:cancelled`. */
  private async endCancelled(run: Run): Promise<void> {
    const { store, clock, events } = this.deps;
    const { lease, log, info } = run;
    if ((await lease.write('cancel', () => store.completeCancel(lease.ref, clock.now()))).kind !== 'written') return;
    const reason = run.cancel.reason ?? run.job.cancelReason;
    run.telemetry.end('cancelled');
    log.info({ jobId: info.id }, `Job ${info.id}: cancelled${reason ? ` (${reason})` : ''}; this run's outcome was discarded`);
    events.emit('job:cancelled', reason === undefined ? { job: info } : { job: info, reason });
  }
}

/** The attempt number the error history uses: counted over the job's life, across replays. */
function lifetimeAttempt(job: { attempt: number; priorAttempts?: number }): number {
  return (job.priorAttempts ?? 0) + job.attempt;
}
