import type { RandomSource } from '../jobs/backoff.js';
import type { StoreOutage } from './store-outage.js';
import { nowMs, type Clock } from '../support/clock.js';
import { InvalidJobClassError, LoomError, OutcomeNotStoredError, type RateLimitedError } from '../support/errors.js';
import type { FlowControl } from './flow-control.js';
import { jobEventInfo, type EventBus } from './events.js';
import { decideAfterFailure } from './failure-policy.js';
import type { BatchSummary, JobHandler } from '../jobs/job-class.js';
import { DEFAULT_JOB_LOG_BYTES, DEFAULT_JOB_LOG_LINES, type JobLogLine, type JobRecord } from '../store/job-record.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import type { ShutdownSignal } from '../support/lazy-abort.js';
import { LazyChildLogger } from '../support/lazy-child-logger.js';
import { LogBuffer, LogTail, type JobLogCaps } from './log-tail.js';
import { afterThisTurn } from '../support/after-this-turn.js';
import { heartbeatInterval, type RunLeaseDeps, type WriteResult } from './lease.js';
import { CompletionBatch } from './completion-batch.js';
import type { RunEnds } from './run-ends.js';
import { JobRun, type RunSteps } from './job-run.js';
import { HeartbeatBatch } from './heartbeat-batch.js';
import type { Logger } from '../support/logger.js';
import { checkSizedPayload } from './payload-check.js';
import { findPlainDataProblem } from '../support/plain-data.js';
import { RunContext, type RunContextServices } from './run-context.js';
import { readBatchSummary } from './batch-summary.js';
import { BatchCalls } from './batch-calls.js';
import type { JobStore } from '../store/store.js';
import { payloadLimitsOf } from '../store/payload-limits.js';
import type { RunSuspension } from '../workflow/run-suspension.js';
import type { WorkflowServices } from '../workflow/run-scope.js';
import { toError } from '../support/to-error.js';
import { toErrorRecord } from '../jobs/error-record.js';
import { completedJobTooLarge } from './outcome-size.js';
import type { Telemetry } from '../observability/telemetry.js';
import type { Sandbox } from '../sandbox/sandbox.js';

/** What is left of a run's `ctx.log` lines for its completion to carry, and the buffer to write them otherwise. */
interface RunLogTail {
  rest: { lines: JobLogLine[]; keep: number } | undefined;
  logs: LogBuffer;
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
export class JobRunner implements RunSteps {
  /** One group commit of completions for every run of this engine. */
  private readonly completions: CompletionBatch;
  /** The shared beat of every run's heartbeats: those due at one instant go as one batch. */
  private readonly heartbeats: HeartbeatBatch;
  /** What every run's lease needs, made once rather than per run. */
  private readonly leaseDeps: RunLeaseDeps;
  /** What every run's context shares. */
  private readonly contextServices: RunContextServices;

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
    this.contextServices = { store: deps.store, clock: deps.clock, workflow: deps.workflow, events: deps.events };
  }

  /**
   * Runs `job` (as returned by `store.claim`). `shutdown` aborts when the engine's grace is over.
   * `onDone` is called once the outcome is stored and the handler has returned (the slot is free).
   */
  run(job: JobRecord, shutdown: ShutdownSignal, onDone: () => void): RunEnds {
    const log = new LazyChildLogger(this.deps.logger, () => ({ jobId: job.id, job: job.name, attempt: job.attempt }));
    const run = new JobRun(this, job, this.leaseDeps, log, onDone);
    this.begin(run, shutdown);
    return run;
  }

  /**
   * The run up to its handler's call: the job's definition, its start, its payload (and a batch
   * callback's batch). A run that ends before its handler is called ends through {@link endAfter};
   * never throws (an unexpected failure is logged and the run ends).
   */
  private begin(run: JobRun, shutdown: ShutdownSignal): void {
    const { store, clock, events, registry, instances } = this.deps;
    const { job, lease } = run;
    try {
      const def = registry.byName(job.name);
      const instance = def?.sandbox && this.deps.sandbox ? this.deps.sandbox.handlerFor(def, job) : instances.get(job.name);
      if (!def || !instance) {
        run.log.error({}, `Job ${job.id}: claimed a job named "${job.name}" that this engine does not know; releasing it`);
        return this.endAfter(
          run,
          lease.write('release', () => store.release(lease.ref, clock.now())),
        );
      }
      run.started(def, jobEventInfo(job), this.deps.telemetry.startRun(job));
      // Reclaimed after its holder died with the cancel requested: end it, never run it.
      if (job.cancelRequestedAt !== undefined) return this.endAfter(run, this.endCancelled(run));
      if (job.attempt > job.maxAttempts) return this.endAfter(run, this.deadLetterAfterLeaseExpiries(run));
      events.emit('job:started', { job: run.info });
      let payload: unknown;
      try {
        const checked = checkSizedPayload(def, job.payload, '', payloadLimitsOf(store));
        payload = checked.value;
        run.payloadBytes = checked.size;
      } catch (err) {
        return this.endAfter(run, this.fail(run, toError(err)));
      }
      if (job.batchCallback === undefined) return this.call(run, instance, payload, shutdown);
      const batchRead = readBatchSummary(store, job.batchCallback.batchId).then(
        (batch) => this.call(run, instance, payload, shutdown, batch),
        (err: unknown) => this.endAfter(run, this.fail(run, toError(err))),
      );
      batchRead.catch((err: unknown) => this.endUnexpectedly(run, err));
    } catch (err) {
      this.endUnexpectedly(run, err);
    }
  }

  /** Calls the handler with the run's context ({@link JobRun.invoke}); {@link afterHandler} follows. */
  private call(run: JobRun, instance: JobHandler, payload: unknown, shutdown: ShutdownSignal, batch?: BatchSummary): void {
    const { clock } = this.deps;
    run.ctx = new RunContext(run, this.contextServices, new LogTail(run.log, run), batch);
    run.startedAt = nowMs(clock);
    run.invoke(instance, payload, clock, shutdown);
  }

  /**
   * The handler's outcome is decided: its last `ctx.log` lines go with a completion (one write),
   * any other outcome writes them first; then the outcome is stored and the run ends.
   */
  afterHandler(run: JobRun): void {
    try {
      const drained = run.logs?.drain();
      if (drained instanceof Promise)
        this.endAfter(
          run,
          drained.then((rest) => this.storeOutcome(run, rest)),
        );
      else this.endAfter(run, this.storeOutcome(run, drained));
    } catch (err) {
      this.endUnexpectedly(run, err);
    }
  }

  /** Stores the decided outcome (with `rest`, the log lines still to write), then ends the run's wait tokens if the job ended. */
  private storeOutcome(run: JobRun, rest: RunLogTail['rest']): Promise<void> {
    const { outcome, ctx, logs } = run;
    const completes = outcome.kind === 'returned' && !ctx.completedInTransaction;
    const stored =
      completes || logs === undefined
        ? this.settle(run, completes && logs !== undefined ? { rest, logs } : undefined)
        : logs.send(rest).then(() => this.settle(run));
    if (!ctx.usedWaitTokens || outcome.kind === 'suspended') return stored;
    return stored.then(() => this.endWaitTokens(run));
  }

  /** The run ends once `step` settles; a rejection is an unexpected failure, logged. */
  private endAfter(run: JobRun, step: Promise<unknown>): void {
    step.then(
      () => this.end(run),
      (err: unknown) => this.endUnexpectedly(run, err),
    );
  }

  private endUnexpectedly(run: JobRun, err: unknown): void {
    this.failedUnexpectedly(run.job, err);
    this.end(run);
  }

  /** Whatever happened, the run ends: its lease, log buffer and span are closed, and its slot is given back. */
  private end(run: JobRun): void {
    try {
      run.lease.stop();
      // A run that ended unexpectedly leaves no flush timer behind (a no-op after drain).
      run.logs?.discard();
      // Ends the span of a run whose outcome was not stored (a no-op after a stored one).
      run.telemetry.end('lost');
    } catch (err) {
      this.failedUnexpectedly(run.job, err);
    }
    if (run.abandoned === undefined) return run.settle();
    // Whatever the warning's check does, the slot must be given back.
    void this.warnIfHandlerIgnoresSignal(run).finally(() => run.settle());
  }

  /**
   * The run was abandoned (timeout, shutdown grace) and its outcome is stored: if the handler has
   * still not returned one event-loop turn later, it ignores `ctx.signal`, and a warning names the
   * job. That wait is the handler's fair chance to honour the abort: a handler that rejects after
   * a chain of awaits (cleanup without new I/O) has returned by then, and one winding down through
   * I/O had as long as the engine's own outcome write took. Not clock time: `stop()` resolves, and
   * tests see the warning, without the clock moving past the timeout or the grace.
   */
  private async warnIfHandlerIgnoresSignal(run: JobRun): Promise<void> {
    await afterThisTurn();
    if (!run.handlerRunning) return;
    const { job, log, abandoned } = run;
    log.warn(
      { jobId: job.id },
      `Job ${job.id}: ${abandoned}, but its handler ignores ctx.signal and is still running; its worker slot stays taken until it returns`,
    );
  }

  /** The run's kept `ctx.log` lines, written under its lease (best effort: a lost lease or a store error loses only those lines). */
  logBuffer(run: JobRun): LogBuffer {
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
  private async endWaitTokens(run: JobRun): Promise<void> {
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

  /** The job's `run`, or — for a batch handler — its place in its name's next `runBatch` call (batch-calls.ts). */
  callHandler(run: JobRun, instance: JobHandler, payload: unknown): unknown {
    const { ctx } = run;
    if (run.def.batch && 'runBatch' in instance) {
      return this.batchCalls.add(run.def, instance, { jobId: run.job.id, payload, attempt: run.job.attempt }, () => ctx.signal);
    }
    if (!('run' in instance)) throw new InvalidJobClassError(run.def.className, 'has no run(payload, ctx) method');
    // eslint-disable-next-line @typescript-eslint/unbound-method -- telemetry.call invokes it with `instance` as `this`
    return run.telemetry.call(instance.run, instance, payload, ctx);
  }

  /** Stores the outcome of a run whose handler has returned (or was abandoned). */
  private settle(run: JobRun, tail?: RunLogTail): Promise<void> {
    const { events } = this.deps;
    const { outcome, ctx, startedAt } = run;
    // A cancel requested while the handler ran discards whatever it came to (unless a
    // ctx.transaction had completed the job before: then the store kept the completion).
    if (run.cancelRequested && !ctx.completedInTransaction) return this.endCancelled(run);
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
        return this.complete(run, outcome.result, tail);
    }
  }

  /** The handler returned `returned`: the job's completion, group-committed with other runs' by the lease. */
  private complete(run: JobRun, returned: unknown, tail?: RunLogTail): Promise<void> {
    const steps = run.ctx.finishSteps();
    if (steps) return steps.then(() => this.storeCompletion(run, returned, tail));
    return this.storeCompletion(run, returned, tail);
  }

  /**
   * Stores the completion once the handler's steps are final. Not an async function: its frame,
   * kept across the store's write, was about 1 KB per run (bench/README.md, "Issue 33 items 2/3:
   * pretenuring, one map of jobs (7 December)"); a completion that is not stored goes on in
   * {@link completionNotStored}.
   */
  private storeCompletion(run: JobRun, returned: unknown, tail?: RunLogTail): Promise<void> {
    const { lease, log, info, ctx } = run;
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
      this.deps.events.emit('job:completed', { job: info, result, durationMs: this.since(run.startedAt) });
    });
  }

  /** The completed job would pass the store's size limits: its last log lines are sent, and the attempt fails. */
  private async failTooLarge(run: JobRun, tooLarge: Error, tail?: RunLogTail): Promise<void> {
    await tail?.logs.send(tail.rest);
    return this.fail(run, tooLarge);
  }

  /** The store did not take the completion: its cancel was requested, or it refused it. */
  private async completionNotStored(run: JobRun, written: Exclude<WriteResult, { kind: 'written' }>): Promise<void> {
    if (written.kind === 'cancelled') await this.cancelRefused(run);
    else if (written.kind === 'refused') await this.fail(run, new OutcomeNotStoredError(run.info.id, 'complete', written.error));
  }

  /** The shutdown grace ended while the handler ran: the job goes back to the queue, attempt not counted. */
  private async released(run: JobRun): Promise<void> {
    const { store, clock } = this.deps;
    const { lease } = run;
    if ((await this.write(run, 'release', () => store.release(lease.ref, clock.now()))).kind !== 'written') return;
    run.log.warn({}, `Job ${run.info.id}: still running when the shutdown grace ended; released for another worker (attempt not counted)`);
    run.telemetry.end('released');
  }

  /** The run parked itself (a durable sleep or wait). */
  private async suspended(run: JobRun, suspension: RunSuspension): Promise<void> {
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
  private async rateLimited(run: JobRun, error: RateLimitedError): Promise<void> {
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
  private async fail(run: JobRun, error: Error): Promise<void> {
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
  private async deadLetterAfterLeaseExpiries(run: JobRun): Promise<void> {
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
  private async write(run: JobRun, op: string, fn: () => Promise<unknown>): Promise<WriteResult> {
    const written = await run.lease.write(op, fn);
    if (written.kind === 'cancelled') await this.cancelRefused(run);
    return written;
  }

  /** The store refused an outcome write because the job's cancel was requested: the run ends the job cancelled. */
  private cancelRefused(run: JobRun): Promise<void> {
    run.requestCancel();
    return this.endCancelled(run);
  }

  /** `running → cancelled` with this run's lease (the handler has returned, or never ran), then `job:cancelled`. */
  private async endCancelled(run: JobRun): Promise<void> {
    const { store, clock, events } = this.deps;
    const { lease, log, info } = run;
    if ((await lease.write('cancel', () => store.completeCancel(lease.ref, clock.now()))).kind !== 'written') return;
    const reason = run.cancelReason ?? run.job.cancelReason;
    run.telemetry.end('cancelled');
    log.info({ jobId: info.id }, `Job ${info.id}: cancelled${reason ? ` (${reason})` : ''}; this run's outcome was discarded`);
    events.emit('job:cancelled', reason === undefined ? { job: info } : { job: info, reason });
  }
}

/** The attempt number the error history uses: counted over the job's life, across replays. */
function lifetimeAttempt(job: { attempt: number; priorAttempts?: number }): number {
  return (job.priorAttempts ?? 0) + job.attempt;
}
