import { randomUUID } from 'node:crypto';
import { toMs, type Duration } from '../support/duration.js';
import { CancelledError, LEASE_EXPIRED_BEFORE_HEARTBEAT, LeaseLostError, LoomError } from '../support/errors.js';
import {
  ACTIVE_STATUSES,
  type DeadLetter,
  type EnqueueResult,
  type ErrorRecord,
  type JobRecord,
  type JobStatus,
  type LeaseRef,
  type NewJob,
  type ScheduleDescription,
  type ScheduleRecord,
  type SignalRecord,
  type StepRecord,
  type StoreStats,
  type WaitCondition,
} from './job-record.js';
import { assertDate, assertNewJob, assertOptionalString, assertString } from './memory-store/arguments.js';
import { ClaimIndex } from './memory-store/claim-index.js';
import { FlowTable } from './memory-store/flow-table.js';
import { assertFlowLimits, reportFlowHolds, type FlowHeldBy, type FlowHoldRecord } from './flow.js';
import { clonePlain } from './memory-store/clone.js';
import { copyDate, copyRecord } from './memory-store/record-copy.js';
import { matchesDeadLetterFilter, matchesJobFilter, matchesJobPageQuery, takeLimit } from './memory-store/filters.js';
import { MemoryTransaction } from './memory-store/memory-transaction.js';
import { SecondaryIndex } from './memory-store/secondary-index.js';
import { QueuedListeners, type QueuedEvent } from './memory-store/queued-listeners.js';
import { ScheduleTable } from './memory-store/schedule-table.js';
import { StatusCounts } from './memory-store/status-counts.js';
import { appendError, putStep, type StoredJob } from './memory-store/stored-job.js';
import { MAX_PENDING_SIGNALS, TooManySignalsError } from './signal-limit.js';
import {
  compareListOrder,
  emptyQueueCounts,
  toJobSummary,
  type CancelOutcome,
  type DeadLetterReplayReport,
  type JobPageQuery,
  type JobSummary,
  type QueueSummary,
  type RemoveOutcome,
  type RetryOutcome,
} from './operations.js';
import type { ClaimRequest, CompletionItem, CompletionOutcome, DeadLetterFilter, FinishedCountQuery, HeartbeatItem, HeartbeatOutcome, JobFilter, JobStore, LeaseExtension } from './store.js';

export { MEMORY_STORE_ERROR_HISTORY } from './memory-store/stored-job.js';

/** `replayDeadLetters` reports progress after this many letters. */
const REPLAY_PROGRESS_EVERY = 500;

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * How long finished jobs are kept. Removal is lazy: it happens during later store operations,
   * judged by the `now` they pass (the store never reads the wall clock). Default: kept forever.
   */
  retention?: {
    /**
     * Completed jobs are removed this long after `finishedAt`, freeing their idempotency key. A
     * child (`ctx.enqueue`) is kept at least until its parent completes or dies.
     */
    completed?: Duration;
    /** Dead letters are removed this long after they died. */
    dead?: Duration;
  };
  /** Receives errors thrown by `subscribe` listeners. Default: `console.error`. */
  onListenerError?: (error: unknown) => void;
}

/** A dead letter as held inside the store. */
interface DeadEntry {
  job: StoredJob;
  reason: string;
  diedAt: Date;
}

// Records drop their lease by setting it to undefined, never with `delete`: deleting a property turns
// the object into a slow dictionary-mode one, and for every finished job kept in memory that cost
// about 1 KB of old-space garbage and slower copies. copyRecord drops undefined fields on the way out.

/**
 * A {@link JobStore} in process memory, for development, tests and single-process use.
 *
 * **Durable within the process only**: everything is lost when the process exits. Use
 * `MongoStore` for jobs that must survive a restart or be shared between processes.
 *
 * Behaviour worth knowing:
 * - It never reads the wall clock: every time comes from the `now` the engine passes.
 * - Data is deep-copied in and out: mutating a payload after enqueueing it, or a
 *   record returned by `getJob`/`claim`, never changes what is stored. Only plain data is kept
 *   (objects, arrays, primitives, Dates); a cycle is refused with `NOT_PLAIN_DATA`.
 * - Idempotency keys are unique among the jobs in the store: queued, running, waiting and
 *   completed ones (until retention removes them). Dead-lettering a job frees its key.
 * - The error history keeps the newest {@link MEMORY_STORE_ERROR_HISTORY} failures.
 * - A replayed dead letter keeps its steps and errors, so a workflow does not redo completed side
 *   effects; its attempts start again from zero.
 * - `withTransaction` buffers the store writes given its session (enqueue, complete) and applies
 *   them together when the callback resolves, or drops them when it throws. The caller's own writes
 *   are not part of it: a MemoryStore holds no user data.
 * - Finished jobs stay until `retention` removes them (default: never). Removal is lazy, done by
 *   later operations against the `now` they pass, oldest finished first.
 * - Claims only look at active jobs of the requested queues and names (finished jobs are kept
 *   apart), so completed jobs piling up never slow claims.
 * - `subscribe` listeners hear about every job that becomes `queued`, not only new ones.
 */
export class MemoryStore implements JobStore {
  /** `queued`, `running` and `waiting` jobs. */
  readonly #active = new Map<string, StoredJob>();
  /** Completed jobs, in completion order (retention removes from the front). */
  readonly #completed = new Map<string, StoredJob>();
  /** Completed children past their retention, kept until their parent finishes (it may still wait for them). */
  readonly #held = new Map<string, StoredJob>();
  /** Dead letters, in the order they died. */
  readonly #dead = new Map<string, DeadEntry>();
  /** Cancelled jobs (kept until removed or retried). */
  readonly #cancelled = new Map<string, StoredJob>();
  /** Queues whose jobs claims skip. */
  readonly #paused = new Set<string>();
  /** Idempotency key → id of the active or completed job holding it. */
  readonly #keys = new Map<string, string>();
  readonly #index = new ClaimIndex();
  readonly #flow = new FlowTable();
  /** Debounce key → the queued job holding it (never started: a claim or a cancel takes the key off). */
  readonly #debounced = new Map<string, StoredJob>();
  /** Active jobs by name (the scheduler's overlap check). */
  readonly #activeByName = new SecondaryIndex();
  /** Active, completed and cancelled jobs by parent id (a parent's children). */
  readonly #byParent = new SecondaryIndex();
  /** Active jobs by parent id (`findActiveChild`). */
  readonly #activeByParent = new SecondaryIndex();
  readonly #counts = new StatusCounts();
  readonly #schedules = new ScheduleTable();
  readonly #listeners: QueuedListeners;
  readonly #retentionMs: { completed?: number; dead?: number };
  #seq = 0;
  /** Lease tokens are this store's random prefix and a claim counter (see {@link #leaseToken}). */
  readonly #tokenPrefix = `${randomUUID()}:`;
  #claims = 0;

  constructor(options: MemoryStoreOptions = {}) {
    this.#retentionMs = {
      completed: parseRetention('completed', options.retention?.completed),
      dead: parseRetention('dead', options.retention?.dead),
    };
    this.#listeners = new QueuedListeners(
      options.onListenerError ?? ((error) => console.error('[loom] a MemoryStore subscribe listener threw:', error)),
    );
  }

  /** Nothing to connect: resolves at once. */
  async init(): Promise<void> {}

  /** Nothing to release; the data stays in memory for as long as the store object lives. */
  async close(): Promise<void> {}

  async enqueue(jobs: NewJob[], opts: { now: Date; session?: unknown }): Promise<EnqueueResult[]> {
    for (const job of jobs) assertNewJob(job, opts.now);
    const debounced = jobs.some((job) => job.debounceKey !== undefined);
    if (opts.session !== undefined) {
      if (debounced) throw debounceInTransaction();
      return this.#enqueueInTransaction(this.#transaction(opts.session), jobs, opts.now);
    }
    this.#sweep(opts.now);
    if (debounced) return jobs.map((job) => this.#enqueueOne(job, opts.now));
    const { results, created } = this.#prepareEnqueue(jobs, opts.now, undefined);
    this.#insert(created, opts.now);
    return results;
  }

  /** One job of a batch with debounced jobs: those update the queued job of their key, if there is one. */
  #enqueueOne(job: NewJob, now: Date): EnqueueResult {
    const key = job.debounceKey;
    const pending = key === undefined ? undefined : this.#debounced.get(key);
    if (!pending) {
      const { results, created } = this.#prepareEnqueue([job], now, undefined);
      this.#insert(created, now);
      return results[0]!;
    }
    const payload = clonePlain(job.payload);
    this.#transition(pending, 'queued', now, (record) => {
      record.payload = payload;
      record.runAt = copyDate(job.runAt);
      record.priority = job.priority;
      record.maxAttempts = job.maxAttempts;
      record.rateLimitKey = job.rateLimitKey;
      record.groupKey = job.groupKey;
    });
    return { id: pending.record.id, deduplicated: false, debounced: true };
  }

  async claim(req: ClaimRequest): Promise<JobRecord[]> {
    if (!Number.isInteger(req.limit) || req.limit < 1) {
      throw new LoomError('INVALID_ARGUMENT', `claim limit must be an integer >= 1, got ${String(req.limit)}`);
    }
    assertDate(req.now, 'claim now');
    assertDate(req.leaseUntil, 'claim leaseUntil');
    assertFlowLimits(req.flow, 'MemoryStore');
    this.#sweep(req.now);
    const now = req.now.getTime();
    const gate = req.flow !== undefined && req.flow.length > 0 ? this.#flow.gate(req.flow, now, req.leaseUntil.getTime()) : undefined;
    const jobs = this.#index.take({ queues: req.queues, names: req.names, excludeNames: req.excludeNames, limit: req.limit, now, gate });
    if (gate) reportFlowHolds(req.onHeld, gate.holds.map((hold) => clonePlain(hold)));
    // One copy of each date for the whole batch: stored dates are never mutated and copies go out,
    // so sharing them saves memory (every finished job keeps its startedAt) and garbage collection
    // (a new Date per job, referenced from old records, is copied by every young-generation GC).
    const leaseUntil = copyDate(req.leaseUntil);
    const startedAt = copyDate(req.now);
    return jobs.map((job) => {
      this.#transition(
        job,
        'running',
        req.now,
        (record) => {
          record.lease = { owner: req.owner, token: this.#leaseToken(), until: leaseUntil };
          record.attempt += 1;
          record.startedAt ??= startedAt;
          if (record.waitingFor !== undefined) record.waitingFor = undefined;
        },
        startedAt,
      );
      return copyRecord(job.record);
    });
  }

  async holdFlow(req: FlowHoldRecord & { now: Date }): Promise<void> {
    assertString(req.name, 'holdFlow name');
    assertOptionalString(req.key, 'holdFlow key');
    assertDate(req.until, 'holdFlow until');
    assertDate(req.now, 'holdFlow now');
    this.#flow.hold({ name: req.name, key: req.key, until: req.until });
  }

  async flowHolds(now: Date): Promise<FlowHoldRecord[]> {
    assertDate(now, 'flowHolds now');
    return this.#flow.holdsAt(now.getTime());
  }

  async extendLease(lease: LeaseRef, until: Date, now: Date): Promise<LeaseExtension> {
    assertDate(until, 'extendLease until');
    assertDate(now, 'extendLease now');
    return this.#extend(lease, until, now);
  }

  async heartbeatMany(items: HeartbeatItem[], now: Date): Promise<HeartbeatOutcome[]> {
    const valid = Array.isArray(items) && items.every((item) => typeof item?.lease === 'object' && item.lease !== null && item.until instanceof Date && !Number.isNaN(item.until.getTime()));
    if (!valid) throw new LoomError('INVALID_ARGUMENT', 'heartbeatMany items must be an array of { lease, until: Date }');
    assertDate(now, 'heartbeatMany now');
    return items.map(({ lease, until }) => {
      try {
        return this.#extend(lease, until, now);
      } catch (error) {
        if (LoomError.is(error, 'LEASE_LOST')) return 'lost';
        return { error: error as Error };
      }
    });
  }

  /** One heartbeat (see {@link JobStore.extendLease}). */
  #extend(lease: LeaseRef, until: Date, now: Date): LeaseExtension {
    const job = this.#leased(lease, true);
    // A lease that ran out is over even if nobody took the job yet: its flow slot may have gone to
    // another run meanwhile, so reviving it could run the job over its limit (a worker resumed after SIGSTOP).
    if (job.record.lease!.until.getTime() < now.getTime()) throw new LeaseLostError(lease.jobId, LEASE_EXPIRED_BEFORE_HEARTBEAT);
    this.#transition(job, 'running', now, (record) => {
      record.lease = { ...record.lease!, until: copyDate(until) };
    });
    return job.record.cancelRequestedAt === undefined ? 'extended' : 'cancel-requested';
  }

  async complete(lease: LeaseRef, outcome: { result?: unknown; now: Date; session?: unknown }): Promise<void> {
    assertDate(outcome.now, 'complete now');
    this.#leased(lease);
    const result = clonePlain(outcome.result);
    if (outcome.session !== undefined) {
      this.#transaction(outcome.session).buffer({
        check: () => void this.#leased(lease),
        // Checked just before; only a second complete of the same lease in one transaction can miss.
        apply: () => {
          const job = this.#active.get(lease.jobId);
          if (job?.record.lease?.token === lease.token) this.#complete(job, result, outcome.now);
        },
      });
      return;
    }
    this.#sweep(outcome.now);
    this.#complete(this.#leased(lease), result, outcome.now);
  }

  async completeMany(items: CompletionItem[], now: Date): Promise<CompletionOutcome[]> {
    const leases = Array.isArray(items) && items.every((item) => typeof item?.lease === 'object' && item.lease !== null);
    if (!leases) throw new LoomError('INVALID_ARGUMENT', 'completeMany items must be an array of { lease, result? }');
    assertDate(now, 'completeMany now');
    this.#sweep(now);
    const finishedAt = copyDate(now); // one for the batch, as in claim
    return items.map(({ lease, result }) => {
      try {
        const job = this.#leased(lease);
        this.#complete(job, clonePlain(result), now, finishedAt);
        return 'completed';
      } catch (error) {
        if (LoomError.is(error, 'LEASE_LOST')) return 'lost';
        if (LoomError.is(error, 'CANCELLED')) return 'cancelled';
        return { error: error as Error };
      }
    });
  }

  async retry(lease: LeaseRef, outcome: { runAt: Date; error: ErrorRecord; now: Date }): Promise<void> {
    assertDate(outcome.runAt, 'retry runAt');
    assertDate(outcome.now, 'retry now');
    const job = this.#leased(lease);
    const error = clonePlain(outcome.error);
    this.#transition(job, 'queued', outcome.now, (record) => {
      record.lease = undefined;
      record.runAt = copyDate(outcome.runAt);
      appendError(record, error);
    });
  }

  async deadLetter(lease: LeaseRef, outcome: { reason: string; error?: ErrorRecord; now: Date }): Promise<void> {
    assertDate(outcome.now, 'deadLetter now');
    const job = this.#leased(lease);
    const error = outcome.error && clonePlain(outcome.error);
    this.#sweep(outcome.now);
    const { record } = job;
    if (error) appendError(record, error);
    this.#active.delete(record.id);
    this.#activeByName.remove(record.name, job);
    this.#byParent.remove(record.parentId, job);
    this.#activeByParent.remove(record.parentId, job);
    this.#freeKey(record);
    this.#counts.add(record.queue, record.status, -1);
    this.#flow.stopped(job);
    record.lease = undefined;
    record.status = 'dead';
    record.deadReason = outcome.reason;
    record.finishedAt = copyDate(outcome.now);
    record.updatedAt = copyDate(outcome.now);
    job.version += 1;
    this.#index.update(job, outcome.now.getTime());
    this.#dead.set(record.id, { job, reason: outcome.reason, diedAt: copyDate(outcome.now) });
    this.#releaseChildren(record.id);
  }

  async release(lease: LeaseRef, now: Date): Promise<void> {
    assertDate(now, 'release now');
    const job = this.#leased(lease);
    this.#transition(job, 'queued', now, (record) => {
      record.lease = undefined;
      record.attempt -= 1;
      record.runAt = copyDate(now);
    });
  }

  async sleep(lease: LeaseRef, req: { runAt: Date; step?: StepRecord; now: Date }): Promise<void> {
    assertDate(req.runAt, 'sleep runAt');
    assertDate(req.now, 'sleep now');
    const job = this.#leased(lease);
    const step = req.step && clonePlain(req.step);
    this.#transition(job, 'queued', req.now, (record) => {
      record.lease = undefined;
      record.attempt -= 1;
      record.runAt = copyDate(req.runAt);
      if (step) putStep(record, step);
    });
  }

  async wait(
    lease: LeaseRef,
    req: { for: WaitCondition; timeoutAt?: Date; step?: StepRecord; now: Date },
  ): Promise<'waiting' | 'signal-pending'> {
    if (req.timeoutAt !== undefined) assertDate(req.timeoutAt, 'wait timeoutAt');
    assertDate(req.now, 'wait now');
    const job = this.#leased(lease);
    const awaited = req.for.signal;
    if (awaited !== undefined && job.record.signals.some((s) => s.name === awaited)) return 'signal-pending';
    const waitingFor = clonePlain(req.for);
    const step = req.step && clonePlain(req.step);
    job.waitHasTimeout = req.timeoutAt !== undefined;
    this.#transition(job, 'waiting', req.now, (record) => {
      record.lease = undefined;
      record.attempt -= 1;
      record.waitingFor = waitingFor;
      if (req.timeoutAt) record.runAt = copyDate(req.timeoutAt);
      if (step) putStep(record, step);
    });
    return 'waiting';
  }

  async wake(jobId: string, now: Date): Promise<boolean> {
    assertDate(now, 'wake now');
    const job = this.#active.get(jobId);
    if (job?.record.status !== 'waiting') return false;
    this.#sweep(now);
    this.#wake(job, now);
    return true;
  }

  async isWaitingFor(jobId: string, awaitedId: string): Promise<boolean> {
    const record = this.#active.get(jobId)?.record;
    return record?.status === 'waiting' && record.waitingFor?.jobs?.includes(awaitedId) === true;
  }

  async findActiveChild(parentId: string): Promise<string | null> {
    for (const job of this.#activeByParent.get(parentId)) return job.record.id;
    return null;
  }

  async recordStep(lease: LeaseRef, step: StepRecord, now: Date): Promise<StepRecord> {
    const { record } = this.#leased(lease);
    const stored = putStep(record, clonePlain(step));
    record.updatedAt = copyDate(now);
    return clonePlain(stored);
  }

  async consumeSignal(lease: LeaseRef, req: { signal: string; stepName: string; now: Date }): Promise<StepRecord | null> {
    const { record } = this.#leased(lease);
    const done = record.steps.find((s) => s.name === req.stepName && s.status === 'completed');
    if (done) return clonePlain(done);
    const index = record.signals.findIndex((s) => s.name === req.signal);
    if (index < 0) return null;
    const [signal] = record.signals.splice(index, 1);
    const step: StepRecord = { name: req.stepName, kind: 'signal', status: 'completed', result: signal.data, at: copyDate(req.now) };
    if (signal.id !== undefined) step.signalId = signal.id;
    const stored = putStep(record, step);
    record.updatedAt = copyDate(req.now);
    return clonePlain(stored);
  }

  async signal(jobId: string, req: { name: string; data: unknown; now: Date; id?: string }): Promise<boolean> {
    assertDate(req.now, 'signal now');
    const job = this.#active.get(jobId);
    if (!job) return false;
    const { record } = job;
    const { id } = req;
    if (id !== undefined && (record.signals.some((s) => s.id === id) || record.steps.some((s) => s.signalId === id))) return true;
    if (record.signals.length >= MAX_PENDING_SIGNALS) throw new TooManySignalsError(jobId, req.name);
    const data = clonePlain(req.data);
    this.#sweep(req.now);
    const signal: SignalRecord = { name: req.name, data, at: copyDate(req.now) };
    if (id !== undefined) signal.id = id;
    record.signals.push(signal);
    record.updatedAt = copyDate(req.now);
    if (record.status === 'waiting' && record.waitingFor?.signal === req.name) this.#wake(job, req.now);
    return true;
  }

  async progress(lease: LeaseRef, value: unknown, now: Date): Promise<void> {
    const { record } = this.#leased(lease);
    record.progress = clonePlain(value);
    record.updatedAt = copyDate(now);
  }

  async getJob(id: string): Promise<JobRecord | null> {
    const job = this.#find(id);
    return job ? copyRecord(job.record) : null;
  }

  async listJobs(filter: JobFilter): Promise<JobRecord[]> {
    const matches: StoredJob[] = [];
    for (const source of this.#candidates(filter)) for (const job of source) if (matchesJobFilter(job.record, filter)) matches.push(job);
    matches.sort((a, b) => b.record.createdAt.getTime() - a.record.createdAt.getTime() || b.seq - a.seq);
    return takeLimit(matches, filter.limit).map((job) => copyRecord(job.record));
  }

  // ---- operating jobs ------------------------------------------------------------------------

  async listJobPage(query: JobPageQuery): Promise<JobSummary[]> {
    if (!Number.isInteger(query.limit) || query.limit < 1) {
      throw new LoomError('INVALID_ARGUMENT', `listJobPage limit must be an integer >= 1, got ${String(query.limit)}`);
    }
    assertOptionalString(query.name, 'listJobPage name');
    assertOptionalString(query.queue, 'listJobPage queue');
    const statuses = new Set(query.statuses);
    const sources: Iterable<StoredJob>[] = [];
    if (statuses.has('queued') || statuses.has('running') || statuses.has('waiting')) {
      sources.push(query.name === undefined ? this.#active.values() : this.#activeByName.get(query.name));
    }
    if (statuses.has('completed')) sources.push(this.#completed.values(), this.#held.values());
    if (statuses.has('cancelled')) sources.push(this.#cancelled.values());
    if (statuses.has('dead')) sources.push([...this.#dead.values()].map((entry) => entry.job));
    // A development store: a scan and a sort per page is fine; MongoStore answers it from indexes.
    const matches: JobSummary[] = [];
    if (query.now !== undefined) assertDate(query.now, 'listJobPage now');
    const now = query.now?.getTime();
    for (const source of sources) {
      for (const job of source) {
        if (!matchesJobPageQuery(job.record, query)) continue;
        const summary = toJobSummary(job.record);
        const heldBy = now === undefined ? undefined : this.#heldBy(job.record, now);
        if (heldBy !== undefined) summary.heldBy = heldBy;
        matches.push(summary);
      }
    }
    matches.sort(compareListOrder);
    return matches.slice(0, query.limit).map((summary) => clonePlain(summary));
  }

  async cancelJob(id: string, req: { reason?: string; now: Date }): Promise<CancelOutcome | null> {
    assertString(id, 'cancelJob id');
    assertDate(req.now, 'cancelJob now');
    assertOptionalString(req.reason, 'cancelJob reason');
    const job = this.#find(id);
    if (!job) return null;
    const { record } = job;
    const expired = record.status === 'running' && record.lease!.until.getTime() < req.now.getTime();
    if (record.status === 'queued' || record.status === 'waiting' || expired) {
      this.#sweep(req.now);
      this.#cancel(job, req.reason, req.now);
      return { outcome: 'cancelled', job: clonePlain(toJobSummary(record)) };
    }
    if (record.status !== 'running') return { outcome: 'unchanged', job: clonePlain(toJobSummary(record)) };
    if (record.cancelRequestedAt === undefined) {
      record.cancelRequestedAt = copyDate(req.now);
      if (req.reason !== undefined) record.cancelReason = req.reason;
      record.updatedAt = copyDate(req.now);
    }
    return { outcome: 'requested', job: clonePlain(toJobSummary(record)) };
  }

  async completeCancel(lease: LeaseRef, now: Date): Promise<void> {
    assertDate(now, 'completeCancel now');
    const job = this.#leased(lease, true);
    this.#sweep(now);
    this.#cancel(job, undefined, now);
  }

  async retryJob(id: string, now: Date): Promise<RetryOutcome | null> {
    assertString(id, 'retryJob id');
    assertDate(now, 'retryJob now');
    const job = this.#find(id);
    if (!job) return null;
    if (job.record.status === 'dead') {
      await this.replayDeadLetter(id, now);
      return { outcome: 'retried', status: 'queued' };
    }
    if (job.record.status !== 'cancelled') return { outcome: 'unchanged', status: job.record.status };
    this.#sweep(now);
    const { record } = job;
    this.#cancelled.delete(id);
    this.#byParent.remove(record.parentId, job);
    this.#counts.add(record.queue, 'cancelled', -1);
    this.#requeue(record, now);
    record.cancelRequestedAt = undefined;
    record.cancelReason = undefined;
    this.#insert([record], now);
    return { outcome: 'retried', status: 'queued' };
  }

  async removeJob(id: string, now: Date): Promise<RemoveOutcome | null> {
    assertString(id, 'removeJob id');
    assertDate(now, 'removeJob now');
    this.#sweep(now);
    const job = this.#find(id);
    if (!job) return null;
    const { record } = job;
    switch (record.status) {
      case 'dead':
        this.#dead.delete(id);
        break;
      case 'completed':
      case 'cancelled':
        if (record.status === 'cancelled') this.#cancelled.delete(id);
        else if (!this.#completed.delete(id)) this.#held.delete(id);
        this.#byParent.remove(record.parentId, job);
        this.#freeKey(record);
        this.#counts.add(record.queue, record.status, -1);
        break;
      default:
        return { outcome: 'unchanged', status: record.status };
    }
    return { outcome: 'removed', status: record.status };
  }

  async replayDeadLetters(filter: DeadLetterFilter, req: { now: Date; onProgress?: (handled: number) => void }): Promise<DeadLetterReplayReport> {
    assertDate(req.now, 'replayDeadLetters now');
    const report: DeadLetterReplayReport = { replayed: 0, skipped: [] };
    const letters = this.#matchingDeadLetters(filter);
    letters.forEach((entry, i) => {
      const id = entry.job.record.id;
      try {
        this.#replay(id, req.now);
        report.replayed += 1;
      } catch (error) {
        if (!LoomError.is(error, 'INVALID_ARGUMENT')) throw error;
        report.skipped.push({ id, reason: error.message });
      }
      if ((i + 1) % REPLAY_PROGRESS_EVERY === 0) req.onProgress?.(i + 1);
    });
    if (letters.length % REPLAY_PROGRESS_EVERY !== 0) req.onProgress?.(letters.length);
    return report;
  }

  async setQueuePaused(queue: string, paused: boolean, now: Date): Promise<void> {
    assertString(queue, 'setQueuePaused queue');
    assertDate(now, 'setQueuePaused now');
    if (typeof paused !== 'boolean') throw new LoomError('INVALID_ARGUMENT', `MemoryStore: setQueuePaused paused must be a boolean; nothing changed`);
    if (paused) this.#paused.add(queue);
    else this.#paused.delete(queue);
  }

  async pausedQueues(): Promise<string[]> {
    return [...this.#paused].sort();
  }

  async listQueues(): Promise<QueueSummary[]> {
    const queues = new Map<string, QueueSummary>();
    const summary = (name: string): QueueSummary => {
      let queue = queues.get(name);
      if (!queue) queues.set(name, (queue = { name, paused: this.#paused.has(name), counts: emptyQueueCounts() }));
      return queue;
    };
    for (const [name, counts] of Object.entries(this.#counts.snapshot())) Object.assign(summary(name).counts, counts);
    for (const entry of this.#dead.values()) summary(entry.job.record.queue).counts.dead += 1;
    for (const name of this.#paused) summary(name);
    for (const job of this.#active.values()) {
      const { record } = job;
      if (record.status !== 'queued') continue;
      const queue = summary(record.queue);
      if (queue.oldestQueuedAt === undefined || record.createdAt < queue.oldestQueuedAt) queue.oldestQueuedAt = copyDate(record.createdAt);
    }
    return [...queues.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async countFinished(req: FinishedCountQuery): Promise<number | null> {
    if (req.status !== 'completed' && req.status !== 'dead') throw new LoomError('INVALID_ARGUMENT', `countFinished status must be 'completed' or 'dead', got ${JSON.stringify(req.status)}`);
    assertDate(req.from, 'countFinished from');
    assertDate(req.to, 'countFinished to');
    const inRange = (t: Date | undefined) => t !== undefined && t >= req.from && t < req.to;
    // A development store: a scan is fine; MongoStore counts an index range.
    let n = 0;
    if (req.status === 'dead') for (const entry of this.#dead.values()) n += inRange(entry.diedAt) ? 1 : 0;
    else for (const job of this.#completed.values()) n += inRange(job.record.finishedAt) ? 1 : 0;
    return n;
  }

  async describeSchedule(name: string, description: ScheduleDescription, now: Date): Promise<void> {
    assertString(name, 'describeSchedule name');
    assertDate(now, 'describeSchedule now');
    this.#schedules.describe(name, clonePlain(description), now);
  }

  async stats(): Promise<StoreStats> {
    return { queues: this.#counts.snapshot(), deadLetters: this.#dead.size };
  }

  async listDeadLetters(filter: DeadLetterFilter): Promise<DeadLetter[]> {
    return this.#matchingDeadLetters(filter).map((entry) => ({
      id: entry.job.record.id,
      job: copyRecord(entry.job.record),
      reason: entry.reason,
      diedAt: copyDate(entry.diedAt),
    }));
  }

  async replayDeadLetter(id: string, now: Date): Promise<string | null> {
    assertDate(now, 'replayDeadLetter now');
    return this.#replay(id, now);
  }

  #replay(id: string, now: Date): string | null {
    this.#sweep(now);
    const entry = this.#dead.get(id);
    if (!entry) return null;
    const { record } = entry.job;
    const key = record.idempotencyKey;
    const holder = key === undefined ? undefined : this.#keys.get(key);
    if (holder !== undefined) {
      throw new LoomError(
        'INVALID_ARGUMENT',
        `Dead letter ${id} cannot be replayed: its idempotency key ${JSON.stringify(key)} is now held by job ${holder}; ` +
          'nothing changed. Let that job finish, or purge this dead letter if it is obsolete',
      );
    }
    this.#dead.delete(id);
    this.#requeue(record, now);
    delete record.deadReason;
    this.#insert([record], now);
    return id;
  }

  async purgeDeadLetters(filter: DeadLetterFilter): Promise<number> {
    const doomed = this.#matchingDeadLetters(filter);
    for (const entry of doomed) this.#dead.delete(entry.job.record.id);
    return doomed.length;
  }

  async ensureSchedule(name: string, now: Date): Promise<ScheduleRecord> {
    assertDate(now, 'ensureSchedule now');
    return this.#schedules.ensure(name, now);
  }

  async advanceSchedule(name: string, expected: Date | null, next: Date, now: Date, fire?: Date[]): Promise<boolean> {
    if (expected !== null) assertDate(expected, 'advanceSchedule expected');
    assertDate(next, 'advanceSchedule next');
    assertDate(now, 'advanceSchedule now');
    fire?.forEach((slot, i) => assertDate(slot, `advanceSchedule fire[${i}]`));
    return this.#schedules.advance(name, expected, next, now, fire);
  }

  async markScheduleFired(name: string, firedUpTo: Date, now: Date): Promise<boolean> {
    assertDate(firedUpTo, 'markScheduleFired firedUpTo');
    assertDate(now, 'markScheduleFired now');
    return this.#schedules.markFired(name, firedUpTo, now);
  }

  async setSchedulePaused(name: string, paused: boolean, now: Date): Promise<boolean> {
    return this.#schedules.setPaused(name, paused, now);
  }

  async listSchedules(): Promise<ScheduleRecord[]> {
    return this.#schedules.list();
  }

  /**
   * Runs `fn` with a session; the store writes given that session (`enqueue`, `complete`) apply
   * together when `fn` resolves, or not at all when it throws. A fenced write whose lease was lost
   * before the commit makes the commit reject with a `LeaseLostError` (nothing applies). The
   * caller's own writes elsewhere are not part of this transaction.
   */
  async withTransaction<T>(fn: (session: unknown) => Promise<T>): Promise<T> {
    const tx = new MemoryTransaction(this);
    try {
      const result = await fn(tx);
      tx.commit();
      return result;
    } finally {
      tx.abort();
    }
  }

  /**
   * Calls `listener` (in a microtask, never inside a store operation) whenever a job becomes
   * `queued`: enqueued, replayed, retried, released, slept, woken or signalled awake. `runAt` says
   * when it will be claimable. Returns an unsubscribe function.
   */
  subscribe(listener: (event: QueuedEvent) => void): () => void {
    return this.#listeners.add(listener);
  }

  // ---- internals -------------------------------------------------------------------------------

  /**
   * The job leased with `lease.token`, or a `LeaseLostError` (nothing changed). Once its cancel was
   * requested only a lease extension and the cancel itself (`cancelRequested`) may write: anything
   * else is refused with a `CancelledError`, so no outcome of the run is accepted after the cancel.
   */
  #leased(lease: LeaseRef, cancelRequested = false): StoredJob {
    const job = this.#active.get(lease.jobId);
    if (!job) {
      throw new LeaseLostError(lease.jobId, 'the job is no longer active: it finished, died or does not exist');
    }
    const { record } = job;
    if (record.status !== 'running' || record.lease?.token !== lease.token) {
      throw new LeaseLostError(lease.jobId);
    }
    if (!cancelRequested && record.cancelRequestedAt !== undefined) {
      throw new CancelledError(lease.jobId, record.cancelReason, 'its cancel was requested, so this write was refused and nothing changed; the run ends cancelled');
    }
    return job;
  }

  /**
   * A fresh lease token: unique among every claim of this store (a counter) and of any other
   * store (a random prefix), which is all a fence needs. A `randomUUID` per claim was about 0.6 KB
   * of garbage and 3% of a no-op job's CPU (bench/README.md, "MemoryStore").
   */
  #leaseToken(): string {
    return this.#tokenPrefix + (++this.#claims).toString(36);
  }

  /** A job by id, wherever it is kept. */
  #find(id: string): StoredJob | undefined {
    return this.#active.get(id) ?? this.#completed.get(id) ?? this.#held.get(id) ?? this.#cancelled.get(id) ?? this.#dead.get(id)?.job;
  }

  /** What holds a due `queued` job back at `now`, where the store knows: a paused queue, a flow limit. */
  #heldBy(record: JobRecord, now: number): FlowHeldBy | undefined {
    if (record.status !== 'queued' || record.runAt.getTime() > now) return undefined;
    if (this.#paused.has(record.queue)) return 'paused';
    return this.#flow.heldBy(record, now);
  }

  /** A job that starts (or is cancelled) no longer takes the debounced enqueues of its key. */
  #dropDebounceKey(record: JobRecord): void {
    const key = record.debounceKey;
    if (key === undefined) return;
    if (this.#debounced.get(key)?.record === record) this.#debounced.delete(key);
    record.debounceKey = undefined;
  }

  /** An active job → `cancelled`. */
  #cancel(job: StoredJob, reason: string | undefined, now: Date): void {
    this.#dropDebounceKey(job.record);
    this.#finish(job, 'cancelled', now, (record) => {
      record.waitingFor = undefined;
      if (reason !== undefined) record.cancelReason = reason;
    });
  }

  /** A finished record made `queued` again at `now` with its attempts reset (replay, retry). */
  #requeue(record: JobRecord, now: Date): void {
    record.status = 'queued';
    record.priorAttempts = (record.priorAttempts ?? 0) + record.attempt;
    record.attempt = 0;
    record.runAt = copyDate(now);
    record.updatedAt = copyDate(now);
    record.lease = undefined;
    record.waitingFor = undefined;
    record.finishedAt = undefined;
  }

  /** Applies `change` and the new status, then re-indexes the job. `at`: a copy of `now` the store owns (one per batch). */
  #transition(job: StoredJob, to: JobStatus, now: Date, change: (record: JobRecord) => void, at = copyDate(now)): void {
    const { record } = job;
    const from = record.status;
    change(record);
    record.status = to;
    record.updatedAt = at;
    job.version += 1;
    if (from !== to) this.#counts.move(record.queue, from, to);
    if (from === 'running' && to !== 'running') this.#flow.stopped(job);
    else if (to === 'running' && from !== 'running') {
      this.#flow.started(job);
      this.#dropDebounceKey(record);
    }
    this.#index.update(job, now.getTime());
    if (to === 'queued') this.#notify(record);
  }

  #wake(job: StoredJob, now: Date): void {
    this.#transition(job, 'queued', now, (record) => {
      delete record.waitingFor;
      record.runAt = copyDate(now);
    });
  }

  #complete(job: StoredJob, result: unknown, now: Date, at?: Date): void {
    this.#finish(job, 'completed', now, undefined, at);
    if (result !== undefined) job.record.result = result;
  }

  /** An active job → `completed` or `cancelled`: out of the active maps and the claim index, kept finished. */
  #finish(job: StoredJob, to: 'completed' | 'cancelled', now: Date, change: ((record: JobRecord) => void) | undefined, at = copyDate(now)): void {
    const { record } = job;
    this.#active.delete(record.id);
    this.#activeByName.remove(record.name, job);
    this.#activeByParent.remove(record.parentId, job);
    this.#counts.move(record.queue, record.status, to);
    if (record.status === 'running') this.#flow.stopped(job);
    record.lease = undefined;
    record.status = to;
    change?.(record);
    record.finishedAt = at;
    record.updatedAt = at;
    job.version += 1;
    this.#index.update(job, now.getTime());
    (to === 'completed' ? this.#completed : this.#cancelled).set(record.id, job);
    this.#releaseChildren(record.id);
  }

  /** Builds the records for `jobs`, deduplicating against stored keys, `pending` keys and the batch. */
  #prepareEnqueue(
    jobs: NewJob[],
    now: Date,
    pending: Map<string, string> | undefined,
  ): { results: EnqueueResult[]; created: JobRecord[] } {
    const batch = new Map<string, string>();
    const results: EnqueueResult[] = [];
    const created: JobRecord[] = [];
    for (const job of jobs) {
      const key = job.idempotencyKey;
      const existing = key === undefined ? undefined : (this.#keys.get(key) ?? pending?.get(key) ?? batch.get(key));
      if (existing !== undefined) {
        results.push({ id: existing, deduplicated: true });
        continue;
      }
      const record = newRecord(job, now);
      if (key !== undefined) batch.set(key, record.id);
      results.push({ id: record.id, deduplicated: false });
      created.push(record);
    }
    return { results, created };
  }

  #enqueueInTransaction(tx: MemoryTransaction, jobs: NewJob[], now: Date): EnqueueResult[] {
    const { results, created } = this.#prepareEnqueue(jobs, now, tx.keys);
    for (const record of created) if (record.idempotencyKey !== undefined) tx.keys.set(record.idempotencyKey, record.id);
    tx.buffer({
      check: () => {
        for (const record of created) {
          const holder = record.idempotencyKey === undefined ? undefined : this.#keys.get(record.idempotencyKey);
          if (holder !== undefined) {
            throw new LoomError(
              'STORE_ERROR',
              `Transaction aborted: idempotency key ${JSON.stringify(record.idempotencyKey)} was taken by job ${holder} ` +
                'while the transaction ran; nothing was committed. Run the transaction again: the enqueue will then deduplicate',
            );
          }
        }
      },
      apply: () => this.#insert(created, now),
    });
    return results;
  }

  /** Stores new (or replayed) `queued` records. */
  #insert(records: JobRecord[], now: Date): void {
    for (const record of records) {
      const job: StoredJob = { record, seq: ++this.#seq, version: 0, waitHasTimeout: false, indexed: false };
      this.#active.set(record.id, job);
      this.#activeByName.add(record.name, job);
      this.#byParent.add(record.parentId, job);
      this.#activeByParent.add(record.parentId, job);
      if (record.idempotencyKey !== undefined) this.#keys.set(record.idempotencyKey, record.id);
      if (record.debounceKey !== undefined) this.#debounced.set(record.debounceKey, job);
      this.#counts.add(record.queue, 'queued', 1);
      this.#index.update(job, now.getTime());
      this.#notify(record);
    }
  }

  /** The smallest set of jobs that holds every match of `filter`. */
  #candidates(filter: JobFilter): Iterable<StoredJob>[] {
    if (filter.idempotencyKey !== undefined) {
      const holder = this.#keys.get(filter.idempotencyKey);
      const job = holder === undefined ? undefined : (this.#active.get(holder) ?? this.#completed.get(holder) ?? this.#held.get(holder) ?? this.#cancelled.get(holder));
      return [job ? [job] : []];
    }
    if (filter.parentId !== undefined) return [this.#byParent.get(filter.parentId)];
    const onlyActive = filter.status !== undefined && filter.status.every((s) => ACTIVE_STATUSES.includes(s));
    if (onlyActive) return [filter.name === undefined ? this.#active.values() : this.#activeByName.get(filter.name)];
    return [this.#active.values(), this.#completed.values(), this.#held.values(), this.#cancelled.values()];
  }

  #freeKey(record: JobRecord): void {
    const key = record.idempotencyKey;
    if (key !== undefined && this.#keys.get(key) === record.id) this.#keys.delete(key);
  }

  #matchingDeadLetters(filter: DeadLetterFilter): DeadEntry[] {
    const matches: DeadEntry[] = [];
    for (const entry of this.#dead.values()) if (matchesDeadLetterFilter({ job: entry.job.record, diedAt: entry.diedAt }, filter)) matches.push(entry);
    // Newest first; the map is in death order, so reversing first keeps ties newest-first too.
    matches.reverse().sort((a, b) => b.diedAt.getTime() - a.diedAt.getTime());
    return takeLimit(matches, filter.limit);
  }

  #transaction(session: unknown): MemoryTransaction {
    if (session instanceof MemoryTransaction && session.owner === this) return session;
    throw new LoomError(
      'INVALID_ARGUMENT',
      'The session was not created by this MemoryStore: pass the session that this store\'s withTransaction gave your callback',
    );
  }

  /**
   * Lazy retention: removes finished jobs and dead letters older than their retention at `now`.
   * The maps are in finishing order, so each sweep stops at the first one still kept: O(removed).
   * (Should the engine's clock step back, a job finished "earlier" behind a later one waits for it.)
   */
  #sweep(now: Date): void {
    const { completed, dead } = this.#retentionMs;
    if (completed !== undefined) {
      const cutoff = now.getTime() - completed;
      for (const [id, job] of this.#completed) {
        if (job.record.finishedAt!.getTime() > cutoff) break;
        this.#completed.delete(id);
        const { parentId } = job.record;
        // A parent still running may wait for this child after sleeping past the retention period.
        if (parentId !== undefined && this.#active.has(parentId)) this.#held.set(id, job);
        else this.#removeCompleted(job);
      }
    }
    if (dead !== undefined) {
      const cutoff = now.getTime() - dead;
      for (const [id, entry] of this.#dead) {
        if (entry.diedAt.getTime() > cutoff) break;
        this.#dead.delete(id);
      }
    }
  }

  /** Forgets a completed job retention removed: its id, its key and its count. */
  #removeCompleted(job: StoredJob): void {
    this.#byParent.remove(job.record.parentId, job);
    this.#freeKey(job.record);
    this.#counts.add(job.record.queue, 'completed', -1);
  }

  /** `parentId` finished: its children kept past their retention for it go now. */
  #releaseChildren(parentId: string): void {
    if (this.#held.size === 0) return;
    for (const child of [...this.#byParent.get(parentId)]) {
      if (!this.#held.delete(child.record.id)) continue;
      this.#removeCompleted(child);
    }
  }

  #notify(record: JobRecord): void {
    this.#listeners.notify(record.id, record.queue, record.runAt);
  }
}

function debounceInTransaction(): LoomError {
  return new LoomError(
    'INVALID_ARGUMENT',
    'MemoryStore: a debounced job (debounceKey) cannot be enqueued inside a transaction: it may update a queued job rather than add one; enqueue it after the transaction commits. Nothing was enqueued',
  );
}

function newRecord(job: NewJob, now: Date): JobRecord {
  const record: JobRecord = {
    id: randomUUID(),
    name: job.name,
    queue: job.queue,
    payload: clonePlain(job.payload),
    status: 'queued',
    priority: job.priority,
    runAt: copyDate(job.runAt),
    attempt: 0,
    maxAttempts: job.maxAttempts,
    errors: [],
    steps: [],
    signals: [],
    createdAt: copyDate(now),
    updatedAt: copyDate(now),
  };
  if (job.idempotencyKey !== undefined) record.idempotencyKey = job.idempotencyKey;
  if (job.parentId !== undefined) record.parentId = job.parentId;
  if (job.scheduledFor !== undefined) record.scheduledFor = copyDate(job.scheduledFor);
  if (job.trace !== undefined) record.trace = clonePlain(job.trace);
  if (job.rateLimitKey !== undefined) record.rateLimitKey = job.rateLimitKey;
  if (job.groupKey !== undefined) record.groupKey = job.groupKey;
  if (job.debounceKey !== undefined) record.debounceKey = job.debounceKey;
  return record;
}

function parseRetention(kind: string, value: Duration | undefined): number | undefined {
  if (value === undefined) return undefined;
  try {
    return toMs(value);
  } catch (error) {
    throw new LoomError('INVALID_ARGUMENT', `MemoryStore retention.${kind}: ${(error as Error).message}`, { cause: error });
  }
}
