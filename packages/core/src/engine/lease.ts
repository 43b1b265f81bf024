import { nowMs, type Clock } from '../support/clock.js';
import type { StoreOutage } from './store-outage.js';
import { clockDelay } from '../support/clock-delay.js';
import { LeaseLostError, LoomError } from '../support/errors.js';
import type { Logger } from '../support/logger.js';
import { toError } from '../support/to-error.js';
import { plainConstructor } from '../support/plain-constructor.js';
import type { JobRecord, LeaseRef } from '../store/job-record.js';
import type { ClaimRequest, CompletionItem, JobStore } from '../store/store.js';
import type { EventBus } from './events.js';
import { withDeadline } from '../support/store-deadline.js';
import type { CompletionBatch } from './completion-batch.js';
import type { HeartbeatBatch } from './heartbeat-batch.js';

/**
 * A run's lease, end to end, in one place:
 *
 * 1. **claimed** — {@link claimLeases} asks the store for jobs and waits at most one lease for the
 *    answer; jobs from an answer that came too late, and jobs claimed while the engine stops, are
 *    released at once by {@link releaseUnstarted} (nobody runs them, their attempt is unused).
 * 2. **heartbeats** — {@link RunLease.start} extends the lease every third of it while the handler
 *    runs, on the engine's shared beat: a {@link HeartbeatBatch} sends the heartbeats of every run
 *    due at one instant as one `store.heartbeatMany`, still fenced per job. A watchdog armed while an extension is in flight declares the lease lost at its end
 *    if the store hangs; a refused extension (`LEASE_LOST`) is lost at once. Lost → the owner's
 *    `leaseLost` (the run aborts `ctx.signal`). An extension that reports a requested cancel (`jobs.cancel`)
 *    calls its `leaseCancelRequested` once and goes on beating: the lease is held until the handler returns.
 * 3. **held** — {@link RunLease.holding} renews the lease to two lengths, then holds heartbeats
 *    back while a `ctx.transaction` runs (until a third of a lease is left): a heartbeat would
 *    conflict with the transaction, whose last write is the fenced completion, and make the
 *    driver re-run its callback.
 * 4. **settling** — {@link RunLease.settle} stops heartbeats: the outcome write's budget is the lease
 *    as it stood then. {@link RunLease.write} retries transient store errors with backoff inside
 *    that budget, never past it, so a write that keeps failing cannot hold the job (or its slot)
 *    forever: once the lease ends the job is claimable again (at-least-once). A completion
 *    ({@link RunLease.complete}) is group-committed with other runs' by a {@link CompletionBatch}
 *    (one `store.completeMany`), still fenced per job and retried by the same loop.
 * 5. **released / lost / cancelled** — a fenced write refused with `LEASE_LOST` discards the
 *    outcome; one refused with `CANCELLED` (the job's cancel was requested) discards it too, and the
 *    runner ends the job cancelled; a write the store refuses for good (see
 *    {@link JobStore.isTransientError}) is handed back to the runner, which fails the attempt instead.
 */

/** How often a lease is extended while its handler runs: every third of it. */
export const heartbeatInterval = (leaseMs: number): number => Math.max(1, Math.floor(leaseMs / 3));

/** How an outcome write ended. */
export type WriteResult =
  /** The store applied it. */
  | { kind: 'written' }
  /** The lease was lost (fence refused it): the outcome is discarded and not counted. */
  | { kind: 'lost' }
  /** The job's cancel was requested: the outcome is discarded; the runner ends the job cancelled. */
  | { kind: 'cancelled' }
  /** The store refused it for good (e.g. the document would pass its size limit). */
  | { kind: 'refused'; error: Error }
  /** Transient failures until the budget ran out, or no answer in time: the job runs again. */
  | { kind: 'gave-up'; error: Error };

/** The result of every write the store applied: one object, read-only to its callers. */
const WRITTEN: WriteResult = Object.freeze({ kind: 'written' });

export interface LeaseDeps {
  store: JobStore;
  clock: Clock;
  events: EventBus;
  leaseMs: number;
  /** The engine's one view of a store outage: one log line when it begins and one when it ends. */
  outage?: StoreOutage;
}

/** What a run's lease needs besides {@link LeaseDeps}: the engine's group commit of completions and its batched heartbeats. */
export interface RunLeaseDeps extends LeaseDeps {
  completions: CompletionBatch;
  heartbeats: HeartbeatBatch;
}

/** The fence of a claimed job's lease: what every write of its run presents to the store. */
function leaseRef(job: JobRecord): LeaseRef {
  return new RunLeaseRef(job.id, job.lease!.token);
}

/** A constructor, not a literal: a lease's fence lives as long as its run (see support/plain-constructor.ts). */
const RunLeaseRef = plainConstructor(function (this: LeaseRef, jobId: string, token: string) {
  this.jobId = jobId;
  this.token = token;
});

/**
 * Claims with a deadline of one lease: a claim still unanswered by then may have leased jobs this
 * engine will never run, so when it does answer, those jobs are handed straight to `releaseLate`
 * (which gives them back with {@link releaseUnstarted}).
 */
export function claimLeases(deps: LeaseDeps, req: ClaimRequest, releaseLate: (job: JobRecord) => void): Promise<JobRecord[]> {
  return withDeadline(deps.clock, 'claim', deps.leaseMs, deps.store.claim(req), (late) => late.forEach(releaseLate));
}

/**
 * Gives back the lease of a job claimed but never run (the engine is stopping, or its claim
 * answered too late): released at once, its attempt unused. Never rejects: a failed release is
 * logged and emitted, and the job runs again when its lease ends.
 */
export function releaseUnstarted(deps: LeaseDeps, job: JobRecord, log: Logger): Promise<void> {
  return deps.store.release(leaseRef(job), deps.clock.now()).catch((err: unknown) => {
    const error = toError(err);
    log.error({ err: error, jobId: job.id }, `Job ${job.id}: releasing it at shutdown failed; it runs again when its lease ends`);
    deps.events.emit('worker:error', { error, operation: 'release', jobId: job.id });
  });
}

/** Whom a run's lease tells what it learns while the handler runs (the run itself: no closures per run). */
export interface RunLeaseOwner {
  /** The lease was lost (taken over, run out, or refused): the run aborts `ctx.signal` with `error`. */
  leaseLost(error: LeaseLostError): void;
  /** A heartbeat reported the job's cancel requested (once per run). */
  leaseCancelRequested(): void;
}

/** The lease of one run: heartbeats while the handler runs, then the budget of its outcome write. */
export class RunLease {
  readonly ref: LeaseRef;
  private leaseUntil: number;
  private state: 'idle' | 'beating' | 'held' | 'settling' | 'stopped' = 'idle';
  private cancelBeat: (() => void) | undefined;
  private cancelWatchdog: (() => void) | undefined;
  /** Bumped whenever heartbeats stop, so an extension in flight from before cannot restart them. */
  private generation = 0;
  /** The extension being written, if any (settled: never rejects). */
  private beatInFlight: Promise<unknown> | undefined;
  private cancelReported = false;

  constructor(
    private readonly deps: RunLeaseDeps,
    job: JobRecord,
    private readonly log: Logger,
    private readonly owner: RunLeaseOwner,
  ) {
    this.ref = leaseRef(job);
    this.leaseUntil = job.lease!.until.getTime();
  }

  /** When the lease currently ends, as far as this worker knows. */
  get until(): Date {
    return new Date(this.leaseUntil);
  }

  /** Starts heartbeats. */
  start(): void {
    if (this.state !== 'idle') return;
    this.state = 'beating';
    // A claim that came back so late that the lease ends before the first beat needs the watchdog now.
    if (this.remaining() <= this.interval()) this.armWatchdog();
    this.scheduleBeat(this.interval());
  }

  /**
   * Runs `fn` — a transaction whose LAST write is this run's fenced completion — with heartbeats
   * held back. A heartbeat is a write to the job's document: one landing after the transaction's
   * snapshot makes its commit fail with a write conflict, and the driver re-runs the whole
   * callback (with beats every third of a lease, a callback longer than that never commits). So
   * any heartbeat in flight lands first, the lease is renewed to two lease lengths, and no
   * heartbeat is sent until a third of a lease is left: a callback that finishes within about
   * 1.6 leases runs once. Past that, heartbeats resume — keeping the job matters more than sparing
   * the callback a re-run. (The completion is not written first to lock the document instead: a
   * worker dying inside the transaction would then lock the job, and every claim that meets it,
   * until the server aborts the transaction — 60 s on MongoDB.) If `fn` fails, heartbeats resume at once.
   */
  async holding<T>(fn: () => Promise<T>): Promise<T> {
    if (this.state !== 'beating') return fn();
    this.pauseBeats('held');
    await this.beatInFlight;
    await this.renewBeforeHold();
    const generation = this.generation;
    const cancelLateBeat = this.deps.clock.setTimer(
      () => {
        if (this.generation === generation && this.state === 'held') this.resumeBeats();
      },
      Math.max(0, this.remaining() - this.interval()),
    );
    let committed = false;
    try {
      const result = await fn();
      committed = true;
      return result;
    } finally {
      cancelLateBeat();
      // `fn` may have ended the lease meanwhile (stop, lost): only a lease still held or beating goes on.
      const state = this.state as RunLease['state'];
      if (committed && (state === 'held' || state === 'beating'))
        this.pauseBeats('settling'); // the job is complete: no lease left to keep
      else if (!committed && state === 'held') this.resumeBeats();
    }
  }

  /** Back to regular heartbeats, starting with one now. */
  private resumeBeats(): void {
    this.state = 'beating';
    void this.beat();
  }

  /** One extension to two lease lengths before heartbeats are held back; a lost lease is reported and thrown. */
  private async renewBeforeHold(): Promise<void> {
    const { store, clock, leaseMs } = this.deps;
    const now = clock.now();
    const until = now.getTime() + 2 * leaseMs;
    try {
      const extension = await store.extendLease(this.ref, new Date(until), now);
      this.leaseUntil = until;
      if (extension === 'cancel-requested') this.cancelRequested();
    } catch (err) {
      if (LoomError.is(err, 'LEASE_LOST')) {
        this.lost(err as LeaseLostError);
        throw err;
      }
      // The lease still runs until `leaseUntil`; the transaction's fenced completion decides.
      const error = toError(err);
      this.log.warn(
        { err: error, jobId: this.ref.jobId },
        `Job ${this.ref.jobId}: renewing the lease before ctx.transaction failed (${error.message}); going on with the lease as it stands`,
      );
      this.deps.events.emit('worker:error', { error, operation: 'extendLease', jobId: this.ref.jobId });
    }
  }

  /** The handler is done: no more heartbeats; outcome writes may use the lease as it stands. */
  settle(): void {
    if (this.state === 'stopped' || this.state === 'settling') return;
    this.pauseBeats('settling');
  }

  /** Ends everything this lease armed. */
  stop(): void {
    this.pauseBeats('stopped');
  }

  /**
   * The run's completion with the handler's `result`: a {@link write} whose store write is grouped
   * with other runs' completions into one `completeMany` ({@link CompletionBatch}), still fenced
   * per job: a lease taken over reports `lost`, as a lone `complete` would.
   */
  complete(result: unknown, logs?: CompletionItem['logs']): Promise<WriteResult> {
    this.settle();
    // The batch applies the write's deadline itself (one timer for all the completions pending).
    const write = (ms: number): Promise<void> => this.deps.completions.complete(this.ref, result, ms, logs);
    // The first try outside the retry loop: nearly every completion is written at once, and the
    // loop's async frame was a tenth of what a no-op run allocated (bench/README.md, "Issue 33 items 2/3").
    return write(this.budget()).then(
      () => this.written('complete'),
      (err: unknown) => this.retryAfter('complete', write, err),
    );
  }

  /**
   * One fenced outcome write (complete, retry, dead-letter, sleep, wait, release), within the
   * budget of the lease as it stood when settling began. Transient store errors are retried with
   * backoff until the lease ends; the write itself is given until then to answer (at least one
   * heartbeat interval, so a write that starts late still gets a real chance).
   */
  write(op: string, fn: () => Promise<unknown>): Promise<WriteResult> {
    return this.writeWithin(op, (ms) => withDeadline(this.deps.clock, op, ms, fn()));
  }

  /**
   * {@link write}, with `fn` given the deadline (ms) it must answer within or reject with a
   * `StoreTimeoutError`; `attempt` counts the tries made before (the backoff grows with it).
   */
  private async writeWithin(op: string, fn: (deadlineMs: number) => Promise<unknown>, attempt = 0): Promise<WriteResult> {
    this.settle();
    for (let i = attempt; ; i++) {
      try {
        await fn(this.budget());
        return this.written(op);
      } catch (err) {
        const next = this.afterFailure(op, err, i);
        if (typeof next !== 'number') return next;
        await clockDelay(this.deps.clock, next);
      }
    }
  }

  /** The first try of `fn` failed with `err`: what {@link writeWithin} does with a failed try, then its loop. */
  private async retryAfter(op: string, fn: (deadlineMs: number) => Promise<unknown>, err: unknown): Promise<WriteResult> {
    const next = this.afterFailure(op, err, 0);
    if (typeof next !== 'number') return next;
    await clockDelay(this.deps.clock, next);
    return this.writeWithin(op, fn, 1);
  }

  /** How long a write may take: the lease as it stands, at least one heartbeat interval. */
  private budget(): number {
    return Math.max(this.remaining(), this.interval());
  }

  private written(op: string): WriteResult {
    this.deps.outage?.succeeded(op);
    return WRITTEN;
  }

  /**
   * Try `attempt` (0-based) of write `op` failed with `err`: the write's result when that ends it
   * (lost, cancelled, refused, gave up), else how long to wait (ms) before the next try.
   */
  private afterFailure(op: string, err: unknown, attempt: number): WriteResult | number {
    const { store, events } = this.deps;
    const jobId = this.ref.jobId;
    if (LoomError.is(err, 'LEASE_LOST')) {
      this.log.warn(
        { err, jobId },
        `Job ${jobId}: the store refused to ${op} it because this worker's lease was lost (another worker owns it now); this run's outcome is discarded`,
      );
      return { kind: 'lost' };
    }
    if (LoomError.is(err, 'CANCELLED')) {
      this.log.info({ jobId }, `Job ${jobId}: its cancel was requested, so the store refused to ${op} it; this run's outcome is discarded`);
      return { kind: 'cancelled' };
    }
    const error = toError(err);
    events.emit('worker:error', { error, operation: op, jobId });
    if (LoomError.is(err, 'STORE_TIMEOUT')) {
      // Retrying could apply the write twice; giving up is safe: if the write lands late it
      // counts, otherwise the job runs again once its lease ends.
      this.log.error({ err: error, jobId }, `Job ${jobId}: ${error.message}; gave up on this run's outcome, the job runs again when its lease ends`);
      return { kind: 'gave-up', error };
    }
    if (!(store.isTransientError?.(err) ?? true)) {
      this.log.error({ err: error, jobId }, `Job ${jobId}: the store refused to ${op} it (${error.message})`);
      return { kind: 'refused', error };
    }
    const remaining = this.remaining();
    if (remaining <= 0) {
      this.log.error({ err: error, jobId }, `Job ${jobId}: could not ${op} it before its lease ran out (${error.message}); it will run again`);
      return { kind: 'gave-up', error };
    }
    const wait = Math.min(100 * 2 ** Math.min(attempt, 10), remaining);
    // During an outage the outage's own line says it; each job's retry is a detail.
    const level = this.deps.outage?.failed(op, error) ? 'debug' : 'error';
    this.log[level]({ err: error, jobId }, `Job ${jobId}: ${op} failed in the store (${error.message}); retrying in ${wait} ms`);
    return wait;
  }

  private remaining(): number {
    return this.leaseUntil - nowMs(this.deps.clock);
  }

  private interval(): number {
    return heartbeatInterval(this.deps.leaseMs);
  }

  private pauseBeats(next: 'held' | 'settling' | 'stopped'): void {
    this.state = next;
    this.generation++;
    this.cancelBeat?.();
    this.cancelBeat = undefined;
    this.disarmWatchdog();
  }

  private scheduleBeat(ms: number): void {
    if (this.state !== 'beating') return;
    this.cancelBeat = this.deps.heartbeats.schedule(() => void this.beat(), ms);
  }

  /** A watchdog at the lease's end: armed while an extension is in flight (or the lease is about to end). */
  private armWatchdog(): void {
    this.disarmWatchdog();
    const generation = this.generation;
    this.cancelWatchdog = this.deps.clock.setTimer(
      () => {
        if (this.generation === generation && this.state === 'beating')
          this.lost(new LeaseLostError(this.ref.jobId, 'the lease ran out before this worker could extend it'));
      },
      Math.max(0, this.remaining()),
    );
  }

  private disarmWatchdog(): void {
    this.cancelWatchdog?.();
    this.cancelWatchdog = undefined;
  }

  private async beat(): Promise<void> {
    if (this.state !== 'beating') return;
    const generation = this.generation;
    const { heartbeats, clock, leaseMs, events } = this.deps;
    const until = clock.now().getTime() + leaseMs;
    this.armWatchdog();
    try {
      // Called before any await: the heartbeat joins the batch of the instant being fired.
      const extension = heartbeats.extend(this.ref, new Date(until));
      this.beatInFlight = extension.catch(() => undefined);
      const extended = await extension;
      if (this.generation !== generation || this.state !== 'beating') return;
      this.leaseUntil = until;
      this.disarmWatchdog();
      this.deps.outage?.succeeded('extendLease');
      this.scheduleBeat(this.interval());
      if (extended === 'cancel-requested') this.cancelRequested();
    } catch (err) {
      if (this.generation !== generation || this.state !== 'beating') return;
      if (LoomError.is(err, 'LEASE_LOST')) return this.lost(err as LeaseLostError);
      const error = toError(err);
      const jobId = this.ref.jobId;
      const level = this.deps.outage?.failed('extendLease', error) ? 'debug' : 'warn';
      this.log[level]({ err: error, jobId }, `Job ${jobId}: extending the lease failed (${error.message}); retrying before it ends`);
      events.emit('worker:error', { error, operation: 'extendLease', jobId });
      const remaining = this.remaining();
      if (remaining <= 0) return this.lost(new LeaseLostError(jobId, 'the lease ran out while the store could not be reached to extend it'));
      this.scheduleBeat(Math.min(this.interval(), remaining));
    }
  }

  /** Reports a requested cancel once; heartbeats go on, so the lease is held while the handler winds down. */
  private cancelRequested(): void {
    if (this.cancelReported) return;
    this.cancelReported = true;
    this.owner.leaseCancelRequested();
  }

  private lost(error: LeaseLostError): void {
    this.stop();
    this.log.warn({ jobId: this.ref.jobId }, error.message);
    this.owner.leaseLost(error);
  }
}
