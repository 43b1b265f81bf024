/**
 * `MemoryStore`, the in-process {@link JobStore}: this class is its public face and delegates each
 * operation to the part of the store that owns it, all sharing one {@link MemoryState}:
 * - `enqueue.ts` new jobs; `debounce.ts` the debounce-key rule;
 * - `claims.ts` claims, flow holds and heartbeats (with `claim-index.ts` and `flow-table.ts`);
 * - `writes.ts` the outcomes of runs (fenced by the lease); `signals.ts` wakes and signals;
 * - `queries.ts` reads; `job-control.ts` cancel, retry, remove, pause; `dead-letters.ts`;
 * - `schedule-table.ts` cron schedules; `retention.ts` the lazy removal of finished jobs;
 * - `batches.ts` batches (`batch-table.ts` their counts, moved by `transition.ts`);
 * - `transition.ts` every change of a job's status and of the maps that keep it.
 */
import type { Duration } from '../../support/duration.js';
import type {
  DeadLetter,
  EnqueueResult,
  ErrorRecord,
  JobLogLine,
  JobRecord,
  LeaseRef,
  NewJob,
  ScheduleDescription,
  ScheduleRecord,
  StepRecord,
  StoreStats,
  WaitCondition,
} from '../job-record.js';
import type { BatchRecord, CreatedBatch, NewBatch } from '../batch.js';
import type { FlowHoldRecord, FlowUsage } from '../flow.js';
import type {
  CancelOutcome,
  DeadLetterReplayReport,
  JobPageQuery,
  JobSummary,
  QueueSummary,
  RemoveOutcome,
  RetryOutcome,
  RunNowOutcome,
} from '../operations.js';
import type {
  ClaimRequest,
  CompletionItem,
  CompletionOutcome,
  DeadLetterFilter,
  FinishedCountQuery,
  HeartbeatItem,
  HeartbeatOutcome,
  JobFilter,
  JobStore,
  LeaseExtension,
} from '../store.js';
import { assertDate, assertString } from './arguments.js';
import * as batches from './batches.js';
import * as claims from './claims.js';
import { clonePlain } from './clone.js';
import * as deadLetters from './dead-letters.js';
import * as dependencies from './dependencies.js';
import { enqueue } from './enqueue.js';
import * as control from './job-control.js';
import { MemoryTransaction } from './memory-transaction.js';
import * as queries from './queries.js';
import { QueuedListeners, type QueuedEvent } from './queued-listeners.js';
import { parseRetention } from './retention.js';
import * as signals from './signals.js';
import { MemoryState } from './state.js';
import * as writes from './writes.js';
import * as waitTokens from './wait-tokens.js';
import type { WaitTokenRecord, WaitTokenSettlement, WaitTokenSettleOutcome } from '../wait-token.js';
import type { WorkerPresence } from '../presence.js';
import { PresenceTable } from './presence-table.js';
import { payloadTooLarge, resolvePayloadLimits, type PayloadLimits } from '../payload-limits.js';
import { mapPacked } from '../../support/packed-map.js';
import { checkSeriesQuery, type QueueSeriesBucket, type QueueSeriesQuery } from '../queue-series.js';

export { MEMORY_STORE_ERROR_HISTORY } from './stored-job.js';

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
  /**
   * The largest payload or result kept, in bytes serialized (the plain-data estimate of BSON), as
   * MongoStore's option of that name: a larger payload is refused at enqueue with
   * `PAYLOAD_TOO_LARGE`, nothing stored. Values are kept inline whatever their size. Default 64 MiB.
   */
  maxPayloadSize?: number;
}

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
  readonly #state: MemoryState;
  /** `maxPayloadSize` as given; `offloadThreshold` is MongoStore's default, which the engine's record-size check counts with. */
  readonly payloadLimits: PayloadLimits;

  constructor(options: MemoryStoreOptions = {}) {
    const listeners = new QueuedListeners(options.onListenerError ?? ((error) => console.error('[loom] a MemoryStore subscribe listener threw:', error)));
    this.#state = new MemoryState(parseRetention(options.retention), listeners);
    this.payloadLimits = resolvePayloadLimits('MemoryStore', { maxPayloadSize: options.maxPayloadSize });
  }

  /** Nothing to connect: resolves at once. */
  async init(): Promise<void> {}

  /** Nothing to release; the data stays in memory for as long as the store object lives. */
  async close(): Promise<void> {}

  async enqueue(jobs: NewJob[], opts: { now: Date; session?: unknown }): Promise<EnqueueResult[]> {
    if (Array.isArray(jobs)) this.#refuseLarge(jobs);
    return enqueue(this.#state, jobs, opts);
  }

  /** Refuses (nothing stored) jobs of which a payload is over `maxPayloadSize`. */
  #refuseLarge(jobs: readonly (NewJob | undefined)[]): void {
    for (const job of jobs) {
      const tooLarge = payloadTooLarge(() => `The payload of job "${String(job?.name)}"`, job?.payload, this.payloadLimits);
      if (tooLarge) throw tooLarge;
    }
  }

  // ---- claims and leases -----------------------------------------------------------------------

  async claim(req: ClaimRequest): Promise<JobRecord[]> {
    return claims.claim(this.#state, req);
  }

  async holdFlow(req: FlowHoldRecord & { now: Date }): Promise<void> {
    claims.holdFlow(this.#state, req);
  }

  async flowHolds(now: Date): Promise<FlowHoldRecord[]> {
    return claims.flowHolds(this.#state, now);
  }

  async flowUsage(now: Date): Promise<FlowUsage[]> {
    assertDate(now, 'flowUsage now');
    return this.#state.flow.usage(now.getTime());
  }

  async extendLease(lease: LeaseRef, until: Date, now: Date): Promise<LeaseExtension> {
    return claims.extendLease(this.#state, lease, until, now);
  }

  async heartbeatMany(items: HeartbeatItem[], now: Date): Promise<HeartbeatOutcome[]> {
    return claims.heartbeatMany(this.#state, items, now);
  }

  // ---- outcomes of runs ------------------------------------------------------------------------

  async complete(lease: LeaseRef, outcome: { result?: unknown; now: Date; session?: unknown }): Promise<void> {
    const tooLarge = payloadTooLarge(() => `The result of job ${String(lease?.jobId)}`, outcome?.result, this.payloadLimits);
    if (tooLarge) throw tooLarge;
    writes.complete(this.#state, lease, outcome);
  }

  async completeMany(items: CompletionItem[], now: Date): Promise<CompletionOutcome[]> {
    // An item whose result is over maxPayloadSize is refused alone; the others are written.
    const refused = Array.isArray(items)
      ? mapPacked(items, (item) => payloadTooLarge(() => `The result of job ${String(item?.lease?.jobId)}`, item?.result, this.payloadLimits))
      : [];
    if (!refused.some((error) => error !== null)) return writes.completeMany(this.#state, items, now);
    const written = writes.completeMany(
      this.#state,
      items.filter((_, i) => refused[i] === null),
      now,
    );
    return refused.map((error): CompletionOutcome => (error === null ? written.shift()! : { error }));
  }

  async retry(lease: LeaseRef, outcome: { runAt: Date; error: ErrorRecord; now: Date }): Promise<void> {
    writes.retry(this.#state, lease, outcome);
  }

  async deadLetter(lease: LeaseRef, outcome: { reason: string; error?: ErrorRecord; now: Date }): Promise<void> {
    writes.deadLetter(this.#state, lease, outcome);
  }

  async release(lease: LeaseRef, now: Date): Promise<void> {
    writes.release(this.#state, lease, now);
  }

  async sleep(lease: LeaseRef, req: { runAt: Date; step?: StepRecord; now: Date }): Promise<void> {
    writes.sleep(this.#state, lease, req);
  }

  async wait(lease: LeaseRef, req: { for: WaitCondition; timeoutAt?: Date; step?: StepRecord; now: Date }): Promise<'waiting' | 'signal-pending'> {
    return writes.wait(this.#state, lease, req);
  }

  async recordStep(lease: LeaseRef, step: StepRecord, now: Date): Promise<StepRecord> {
    return writes.recordStep(this.#state, lease, step, now);
  }

  async consumeSignal(lease: LeaseRef, req: { signal: string; stepName: string; now: Date }): Promise<StepRecord | null> {
    return writes.consumeSignal(this.#state, lease, req);
  }

  async createWaitToken(lease: LeaseRef, token: WaitTokenRecord, now: Date): Promise<void> {
    waitTokens.createWaitToken(this.#state, lease, token, now);
  }

  async getWaitToken(id: string): Promise<WaitTokenRecord | null> {
    return waitTokens.getWaitToken(this.#state, id);
  }

  async settleWaitToken(id: string, req: { settlement: WaitTokenSettlement; now: Date }): Promise<WaitTokenSettleOutcome | null> {
    return waitTokens.settleWaitToken(this.#state, id, req);
  }

  async endWaitTokens(jobId: string, now: Date): Promise<number> {
    return waitTokens.endWaitTokens(this.#state, jobId, now);
  }

  async listWaitTokens(jobId: string): Promise<WaitTokenRecord[]> {
    return waitTokens.listWaitTokens(this.#state, jobId);
  }

  async appendLogs(lease: LeaseRef, lines: JobLogLine[], now: Date, keep?: number): Promise<void> {
    writes.appendLogs(this.#state, lease, lines, now, keep);
  }

  async progress(lease: LeaseRef, value: unknown, now: Date): Promise<void> {
    writes.progress(this.#state, lease, value, now);
  }

  // ---- wakes and signals -----------------------------------------------------------------------

  async settleDependents(req: { now: Date; jobIds?: string[]; limit?: number }): Promise<number> {
    return dependencies.settleDependents(this.#state, req);
  }

  async wake(jobId: string, now: Date): Promise<boolean> {
    return signals.wake(this.#state, jobId, now);
  }

  async isWaitingFor(jobId: string, awaitedId: string): Promise<boolean> {
    return signals.isWaitingFor(this.#state, jobId, awaitedId);
  }

  async findActiveChild(parentId: string): Promise<string | null> {
    return signals.findActiveChild(this.#state, parentId);
  }

  async signal(jobId: string, req: { name: string; data: unknown; now: Date; id?: string }): Promise<boolean> {
    return signals.signal(this.#state, jobId, req);
  }

  // ---- reads -----------------------------------------------------------------------------------

  async getJob(id: string): Promise<JobRecord | null> {
    return queries.getJob(this.#state, id);
  }

  async listJobs(filter: JobFilter): Promise<JobRecord[]> {
    return queries.listJobs(this.#state, filter);
  }

  async listJobPage(query: JobPageQuery): Promise<JobSummary[]> {
    return queries.listJobPage(this.#state, query);
  }

  async listQueues(now?: Date): Promise<QueueSummary[]> {
    const list = queries.listQueues(this.#state, now);
    if (now instanceof Date) for (const q of list) this.#state.series.sampleDepth(q.name, now, q.counts.queued);
    return list;
  }

  // ---- per-queue series (the dashboard's charts) -----------------------------------------------

  /** Counted where runs start and end: `claims.ts` (starts, waits) and `writes.ts` (completions, failures, deaths). */
  async queueSeries(req: QueueSeriesQuery): Promise<QueueSeriesBucket[]> {
    checkSeriesQuery(req);
    return this.#state.series.read(req);
  }

  async countFinished(req: FinishedCountQuery): Promise<number | null> {
    return queries.countFinished(this.#state, req);
  }

  async nextClaimableAt(now: Date): Promise<Date | null> {
    return queries.nextClaimableAt(this.#state, now);
  }

  async stats(): Promise<StoreStats> {
    return queries.stats(this.#state);
  }

  async pausedQueues(): Promise<string[]> {
    return queries.pausedQueues(this.#state);
  }

  // ---- operating jobs --------------------------------------------------------------------------

  async cancelJob(id: string, req: { reason?: string; now: Date }): Promise<CancelOutcome | null> {
    return control.cancelJob(this.#state, id, req);
  }

  async completeCancel(lease: LeaseRef, now: Date): Promise<void> {
    control.completeCancel(this.#state, lease, now);
  }

  async retryJob(id: string, now: Date): Promise<RetryOutcome | null> {
    return control.retryJob(this.#state, id, now);
  }

  async runJobNow(id: string, now: Date): Promise<RunNowOutcome | null> {
    return control.runJobNow(this.#state, id, now);
  }

  async removeJob(id: string, now: Date): Promise<RemoveOutcome | null> {
    return control.removeJob(this.#state, id, now);
  }

  async setQueuePaused(queue: string, paused: boolean, now: Date): Promise<void> {
    control.setQueuePaused(this.#state, queue, paused, now);
  }

  // ---- dead letters ----------------------------------------------------------------------------

  async listDeadLetters(filter: DeadLetterFilter): Promise<DeadLetter[]> {
    return deadLetters.listDeadLetters(this.#state, filter);
  }

  async replayDeadLetter(id: string, now: Date): Promise<string | null> {
    return deadLetters.replayDeadLetter(this.#state, id, now);
  }

  async replayDeadLetters(filter: DeadLetterFilter, req: { now: Date; onProgress?: (handled: number) => void }): Promise<DeadLetterReplayReport> {
    return deadLetters.replayDeadLetters(this.#state, filter, req);
  }

  async purgeDeadLetters(filter: DeadLetterFilter): Promise<number> {
    return deadLetters.purgeDeadLetters(this.#state, filter);
  }

  // ---- batches ---------------------------------------------------------------------------------

  async createBatch(batch: NewBatch, opts: { now: Date }): Promise<CreatedBatch> {
    if (Array.isArray(batch?.jobs)) this.#refuseLarge(batch.jobs);
    return batches.createBatch(this.#state, batch, opts?.now);
  }

  async getBatch(id: string): Promise<BatchRecord | null> {
    return batches.getBatch(this.#state, id);
  }

  async batchFailures(id: string): Promise<string[]> {
    return batches.batchFailures(this.#state, id);
  }

  // ---- schedules -------------------------------------------------------------------------------

  async describeSchedule(name: string, description: ScheduleDescription, now: Date): Promise<void> {
    assertString(name, 'describeSchedule name');
    assertDate(now, 'describeSchedule now');
    this.#state.schedules.describe(name, clonePlain(description), now);
  }

  async ensureSchedule(name: string, now: Date): Promise<ScheduleRecord> {
    assertDate(now, 'ensureSchedule now');
    return this.#state.schedules.ensure(name, now);
  }

  async advanceSchedule(name: string, expected: Date | null, next: Date, now: Date, fire?: Date[]): Promise<boolean> {
    if (expected !== null) assertDate(expected, 'advanceSchedule expected');
    assertDate(next, 'advanceSchedule next');
    assertDate(now, 'advanceSchedule now');
    fire?.forEach((slot, i) => assertDate(slot, `advanceSchedule fire[${i}]`));
    return this.#state.schedules.advance(name, expected, next, now, fire);
  }

  async markScheduleFired(name: string, firedUpTo: Date, now: Date): Promise<boolean> {
    assertDate(firedUpTo, 'markScheduleFired firedUpTo');
    assertDate(now, 'markScheduleFired now');
    return this.#state.schedules.markFired(name, firedUpTo, now);
  }

  async setSchedulePaused(name: string, paused: boolean, now: Date): Promise<boolean> {
    return this.#state.schedules.setPaused(name, paused, now);
  }

  async listSchedules(): Promise<ScheduleRecord[]> {
    return this.#state.schedules.list();
  }

  // ---- engine presence -------------------------------------------------------------------------

  readonly #presence = new PresenceTable();

  async recordPresence(presence: WorkerPresence): Promise<void> {
    this.#presence.record(presence);
  }

  async removePresence(id: string): Promise<boolean> {
    return this.#presence.remove(id);
  }

  async listPresence(now: Date): Promise<WorkerPresence[]> {
    return this.#presence.list(now);
  }

  // ---- transactions and notifications ----------------------------------------------------------

  /**
   * Runs `fn` with a session; the store writes given that session (`enqueue`, `complete`) apply
   * together when `fn` resolves, or not at all when it throws. A fenced write whose lease was lost
   * before the commit makes the commit reject with a `LeaseLostError` (nothing applies). The
   * caller's own writes elsewhere are not part of this transaction.
   */
  async withTransaction<T>(fn: (session: unknown) => Promise<T>): Promise<T> {
    const tx = new MemoryTransaction(this.#state);
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
    return this.#state.listeners.add(listener);
  }
}
