import type { RandomSource } from '../jobs/backoff.js';
import type { Clock } from '../support/clock.js';
import { clockDelay } from '../support/clock-delay.js';
import { EngineStoppedError } from '../support/engine-errors.js';
import { JobTimeoutError, LoomError } from '../support/errors.js';
import { jobEventInfo, type EventBus, type JobEventInfo } from './events.js';
import { decideAfterFailure } from './failure-policy.js';
import type { JobHandler } from '../jobs/job-class.js';
import type { JobDefinition } from '../jobs/job-definition.js';
import type { JobRecord, LeaseRef } from '../store/job-record.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import { LazyAbort, type ShutdownSignal } from '../support/lazy-abort.js';
import { LazyChildLogger } from '../support/lazy-child-logger.js';
import { heartbeatInterval, LeaseKeeper } from './lease-keeper.js';
import type { Logger } from '../support/logger.js';
import { checkPayload } from './payload-check.js';
import { findPlainDataProblem } from '../support/plain-data.js';
import { RunContext } from './run-context.js';
import { SameDelayTimers } from '../support/same-delay-timers.js';
import type { JobStore } from '../store/store.js';
import type { RunSuspension } from './suspension.js';
import { StoreTimeoutError, withDeadline } from './store-deadline.js';
import type { WorkflowServices } from '../workflow/run-scope.js';
import { toError, toErrorRecord } from '../support/to-error.js';

/**
 * How long an outcome write may take before the run gives up on it: long (a slow store is not a
 * hung one), but finite, so a store that never answers cannot hold a worker slot forever.
 */
const writeDeadlineMs = (leaseMs: number): number => Math.max(3 * leaseMs, 60_000);

/** How a handler invocation ended. */
type Outcome =
  | { kind: 'returned'; result: unknown }
  | { kind: 'threw'; error: Error }
  | { kind: 'suspended'; suspension: RunSuspension }
  | { kind: 'released' };

/** Everything one run needs to write its outcome. */
interface Run {
  job: JobRecord;
  def: JobDefinition;
  info: JobEventInfo;
  lease: LeaseRef;
  keeper: LeaseKeeper;
  log: Logger;
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
}

/**
 * Runs one claimed job to a stored outcome: keeps its lease alive, checks the payload, calls the
 * handler with a {@link RunContext}, enforces the timeout, and records completion, retry, dead
 * letter, suspension or (at shutdown) release. Every outcome write is fenced by the lease; a write
 * the store refuses because the lease was lost is logged and not counted. `run` never rejects.
 */
export class JobRunner {
  /** Heartbeats and outcome-write deadlines of all runs, each on one clock timer instead of one per run. */
  private readonly beats: SameDelayTimers;
  private readonly writeDeadlines: SameDelayTimers;

  constructor(private readonly deps: JobRunnerDeps) {
    this.beats = new SameDelayTimers(deps.clock, heartbeatInterval(deps.leaseMs));
    this.writeDeadlines = new SameDelayTimers(deps.clock, writeDeadlineMs(deps.leaseMs));
  }

  /** Runs `job` (as returned by `store.claim`). `shutdown` aborts when the engine's grace is over. */
  async run(job: JobRecord, shutdown: ShutdownSignal): Promise<void> {
    try {
      await this.runClaimed(job, shutdown);
    } catch (err) {
      const error = toError(err);
      this.deps.logger.error({ err: error, jobId: job.id }, `Job ${job.id}: the runner failed unexpectedly; the job will run again when its lease ends`);
      this.deps.events.emit('worker:error', { error, operation: 'run', jobId: job.id });
    }
  }

  private async runClaimed(job: JobRecord, shutdown: ShutdownSignal): Promise<void> {
    const { store, clock, events, registry, instances, leaseMs } = this.deps;
    const lease: LeaseRef = { jobId: job.id, token: job.lease!.token };
    const log = new LazyChildLogger(this.deps.logger, { jobId: job.id, job: job.name, attempt: job.attempt });
    const def = registry.byName(job.name);
    const instance = instances.get(job.name);
    if (!def || !instance) {
      log.error({}, `Job ${job.id}: claimed a job named "${job.name}" that this engine does not know; releasing it`);
      await store.release(lease, clock.now());
      return;
    }
    const controller = new LazyAbort();
    const keeper = new LeaseKeeper({ store, clock, logger: log, events, lease, leaseMs, until: job.lease!.until, onLost: (err) => controller.abort(err), beats: this.beats });
    const run: Run = { job, def, info: jobEventInfo(job), lease, keeper, log };
    keeper.start();
    try {
      if (job.attempt > job.maxAttempts) return await this.deadLetterAfterLeaseExpiries(run);
      events.emit('job:started', { job: run.info });
      let payload: unknown;
      try {
        payload = checkPayload(def, job.payload);
      } catch (err) {
        return await this.fail(run, toError(err));
      }
      const ctx = new RunContext({ job, lease, store, clock, logger: log, abort: controller, workflow: this.deps.workflow });
      const startedAt = clock.now().getTime();
      const outcome = await this.invoke(run, instance, payload, ctx, controller, shutdown);
      await this.settle(run, outcome, ctx, startedAt);
    } finally {
      keeper.stop();
    }
  }

  /**
   * Calls the handler. Resolves when it settles, when the timeout fires (even if the handler
   * ignores `ctx.signal`), or when the engine's shutdown grace is over. A lost lease aborts
   * `ctx.signal` but the runner keeps waiting, so the handler's outcome reaches the store and is
   * refused there.
   */
  private invoke(run: Run, instance: JobHandler, payload: unknown, ctx: RunContext, controller: LazyAbort, shutdown: ShutdownSignal): Promise<Outcome> {
    const { job, def } = run;
    return new Promise<Outcome>((resolve) => {
      let done = false;
      const cleanups: Array<() => void> = [];
      const finish = (outcome: Outcome): void => {
        if (done) return;
        done = true;
        for (const cleanup of cleanups) cleanup();
        resolve(outcome);
      };
      if (def.timeoutMs !== undefined) {
        const timeoutMs = def.timeoutMs;
        cleanups.push(
          this.deps.clock.setTimer(() => {
            const error = new JobTimeoutError(job.id, timeoutMs);
            controller.abort(error);
            finish({ kind: 'threw', error });
          }, timeoutMs),
        );
      }
      const onShutdown = (): void => {
        controller.abort(new EngineStoppedError(job.id));
        finish({ kind: 'released' });
      };
      cleanups.push(shutdown.onAbort(onShutdown));
      const suspendedOr = (other: Outcome): Outcome => (ctx.suspension ? { kind: 'suspended', suspension: ctx.suspension } : other);
      Promise.resolve()
        .then(() => (done ? undefined : instance.run(payload, ctx)))
        .then(
          (result) => finish(suspendedOr({ kind: 'returned', result })),
          (err: unknown) => finish(suspendedOr({ kind: 'threw', error: toError(err) })),
        );
    });
  }

  private async settle(run: Run, outcome: Outcome, ctx: RunContext, startedAt: number): Promise<void> {
    const { store, clock, events } = this.deps;
    const { lease, log, info } = run;
    const durationMs = (): number => clock.now().getTime() - startedAt;
    switch (outcome.kind) {
      case 'released':
        if (await this.write(run, 'release', () => store.release(lease, clock.now()))) {
          log.warn({}, `Job ${lease.jobId}: still running when the shutdown grace ended; released for another worker (attempt not counted)`);
        }
        return;
      case 'suspended': {
        const { suspension } = outcome;
        if (await this.write(run, 'suspend', () => suspension.commit(lease, clock.now()))) {
          log.debug({ until: suspension.until }, `Job ${lease.jobId}: suspended (${suspension.reason})`);
          events.emit('job:suspended', suspension.until ? { job: info, reason: suspension.reason, until: suspension.until } : { job: info, reason: suspension.reason });
        }
        return;
      }
      case 'threw':
        if (!ctx.completedInTransaction) return this.fail(run, outcome.error);
        log.warn({ err: outcome.error }, `Job ${lease.jobId}: the handler threw after ctx.transaction completed the job; it stays completed`);
        events.emit('job:completed', { job: info, result: undefined, durationMs: durationMs() });
        return;
      case 'returned': {
        if (ctx.completedInTransaction) {
          events.emit('job:completed', { job: info, result: undefined, durationMs: durationMs() });
          return;
        }
        await ctx.finishSteps();
        let result = outcome.result;
        const problem = result === undefined ? null : findPlainDataProblem(result);
        if (problem) {
          log.warn({ path: problem.path }, `Job ${lease.jobId}: the handler's return value is not plain data at ${problem.path || '(root)'} (${problem.reason}); the job completes without a stored result`);
          result = undefined;
        }
        const write = (): Promise<void> => store.complete(lease, result === undefined ? { now: clock.now() } : { result, now: clock.now() });
        if (await this.write(run, 'complete', write)) events.emit('job:completed', { job: info, result, durationMs: durationMs() });
        return;
      }
    }
  }

  /** Records a failed attempt: a retry after backoff, or the dead letters (permanent or out of attempts). */
  private async fail(run: Run, error: Error): Promise<void> {
    const { store, clock, events, random } = this.deps;
    const { job, def, lease, log, info } = run;
    const now = clock.now();
    const record = toErrorRecord(error, job.attempt, now);
    const decision = decideAfterFailure(def, job.attempt, job.maxAttempts, error, record.message, random, (err) =>
      log.error({ err }, `Job ${job.id}: the job's backoff function failed; used the default backoff instead`),
    );
    if (decision.kind === 'retry') {
      const runAt = new Date(now.getTime() + decision.delayMs);
      if (!(await this.write(run, 'retry', () => store.retry(lease, { runAt, error: record, now: clock.now() })))) return;
      log.warn({ err: error, runAt }, `Job ${job.id}: attempt ${job.attempt} of ${job.maxAttempts} failed (${record.message}); retrying in ${decision.delayMs} ms`);
      events.emit('job:failed', { job: info, error, willRetry: true });
      events.emit('job:retrying', { job: info, error, runAt, delayMs: decision.delayMs });
      return;
    }
    if (!(await this.write(run, 'dead-letter', () => store.deadLetter(lease, { reason: decision.reason, error: record, now: clock.now() })))) return;
    log.error({ err: error }, `Job ${job.id}: moved to the dead letters: ${decision.reason}`);
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
    const expiries = Math.max(1, job.attempt - 1 - job.errors.length);
    const reason = `lease expired ${expiries} time${expiries === 1 ? '' : 's'}: the job crashed or stalled its worker (attempt ${job.attempt} exceeds ${job.maxAttempts})`;
    const error = { attempt: job.attempt, at: now, name: 'LeaseExpired', message: reason, code: 'LEASE_LOST' };
    if (!(await this.write(run, 'dead-letter', () => this.deps.store.deadLetter(lease, { reason, error, now: this.deps.clock.now() })))) return;
    log.error({}, `Job ${job.id}: moved to the dead letters: ${reason}`);
    this.deps.events.emit('job:dead', { job: info, reason });
  }

  /**
   * Performs one fenced outcome write. A lost lease is logged and returns false (the outcome is
   * discarded, never counted). Other store errors are retried with backoff while the lease lasts;
   * after that the job simply runs again elsewhere (at-least-once).
   */
  private async write(run: Run, op: string, fn: () => Promise<unknown>): Promise<boolean> {
    const { job, keeper, log } = run;
    for (let i = 0; ; i++) {
      try {
        await withDeadline(this.writeDeadlines, op, this.writeDeadlines.ms, fn());
        return true;
      } catch (err) {
        if (LoomError.is(err, 'LEASE_LOST')) {
          log.warn({ err }, `Job ${job.id}: the store refused to ${op} it because this worker's lease was lost (another worker owns it now); this run's outcome is discarded`);
          return false;
        }
        const error = toError(err);
        this.deps.events.emit('worker:error', { error, operation: op, jobId: job.id });
        if (err instanceof StoreTimeoutError) {
          // Retrying could apply the write twice; giving up is safe: if the write lands late it
          // counts, otherwise the job runs again once its lease ends.
          log.error({ err: error }, `Job ${job.id}: ${error.message}; gave up on this run's outcome`);
          return false;
        }
        const remaining = keeper.until.getTime() - this.deps.clock.now().getTime();
        if (remaining <= 0) {
          log.error({ err: error }, `Job ${job.id}: could not ${op} it before its lease ran out; it will run again`);
          return false;
        }
        const wait = Math.min(100 * 2 ** Math.min(i, 10), remaining);
        log.error({ err: error }, `Job ${job.id}: ${op} failed in the store; retrying in ${wait} ms`);
        await clockDelay(this.deps.clock, wait);
      }
    }
  }
}
