import type {
  DeadLetter,
  EnqueueResult,
  ErrorRecord,
  JobLogLine,
  JobRecord,
  JobStatus,
  LeaseRef,
  NewJob,
  ScheduleDescription,
  ScheduleRecord,
  StepRecord,
  StoreStats,
  WaitCondition,
} from './job-record.js';
import type { BatchRecord, CreatedBatch, NewBatch } from './batch.js';
import type { PayloadLimits } from './payload-limits.js';
import type { FlowHold, FlowHoldRecord, FlowLimits, FlowUsage } from './flow.js';
import type { WorkerPresence } from './presence.js';
import type { QueueSeriesBucket, QueueSeriesQuery } from './queue-series.js';
import type { WaitTokenRecord, WaitTokenSettlement, WaitTokenSettleOutcome } from './wait-token.js';
import type {
  CancelOutcome,
  DeadLetterReplayReport,
  JobPageQuery,
  JobSummary,
  QueueSummary,
  RemoveOutcome,
  RetryOutcome,
  RunNowOutcome,
} from './operations.js';

/**
 * The one interface between the engine and storage. Operations are named by intent, follow the
 * state machine in `LIFECYCLE.md`, and are each atomic.
 *
 * Two rules every implementation keeps:
 * - **The store never reads the wall clock.** The engine passes `now` into every operation
 *   (`serverTime` reports the database's clock so the engine can check its own).
 * - **Every operation that takes a {@link LeaseRef} is fenced.** When the job is no longer
 *   `running` with that token, it changes nothing and rejects with a `LeaseLostError`
 *   (code `LEASE_LOST`). That single rule makes a paused or partitioned worker harmless.
 *
 * A store that removes completed jobs after a retention period keeps a completed job whose parent
 * (`parentId`) is still queued, running or waiting until that parent completes or dies: the parent
 * may `ctx.waitForJob` it long after it finished.
 *
 * Stores own their connection and expose no driver types; a `session` is an opaque value that
 * only the store that created it (through {@link JobStore.withTransaction}) understands.
 * Every store passes `describeStoreConformance` from `@loom/testing`.
 */
export interface JobStore {
  /** Connects and creates/verifies indexes. Idempotent; called by `Loom.create`. */
  init(): Promise<void>;
  /** Releases connections the store opened itself. */
  close(): Promise<void>;

  /**
   * The largest payload or result the store accepts, and from what size it keeps one outside the
   * job's record (`payload-limits.ts`). The engine refuses a larger payload at enqueue with
   * `PAYLOAD_TOO_LARGE` before calling the store, and the store refuses it again (storing nothing)
   * in `enqueue`, `createBatch`, `complete` and `completeMany`. A store keeping a value outside the
   * record says so in the record (`offloadedPayload`, `offloadedResult`): `getJob` and `claim`
   * return the value itself, `listJobs` and `listJobPage` leave it out and give its size. Optional:
   * without it values are kept inline up to 16 MiB.
   */
  readonly payloadLimits?: PayloadLimits;

  /**
   * Housekeeping the store cannot do in its writes: MongoStore deletes offloaded values whose jobs
   * are gone (removed by its TTL index, or a crash between two writes), once they are older than a
   * grace period. The engine calls it every {@link STORE_MAINTENANCE_MS} while started, with its
   * clock's `now`. Idempotent, safe to run in many processes at once. Optional.
   */
  maintain?(now: Date): Promise<void>;

  /**
   * Stores new `queued` jobs. A job whose idempotency key is taken stores nothing and returns the
   * existing job's id with `deduplicated: true` (also when racing another process). Results are in
   * input order.
   *
   * Dependencies (`dependsOn`: stored ids; `dependsOnBatch`: positions in `jobs`): every id must
   * exist and the batch's edges must not make a cycle, else it rejects with an
   * `InvalidDependenciesError` and stores nothing (the whole call is one atomic write: a store
   * without a single-write batch uses a transaction). The job is added to each dependency's
   * `dependents`; it is stored `waiting` with `waitingFor.dependencies` = the dependencies not
   * completed (the `enqueueWaiting` row), or `queued` when all are. A dependency already dead or
   * cancelled is settled by the next {@link settleDependents}, as if it had just ended.
   */
  enqueue(jobs: NewJob[], opts: { now: Date; session?: unknown }): Promise<EnqueueResult[]>;

  /**
   * Atomically leases up to `limit` claimable jobs to `owner`: `queued` with `runAt <= now`,
   * `running` with an expired lease (`lease.until < now`: a reclaim), or `waiting` whose timeout
   * `runAt <= now`. Each gets a fresh token, `lease.until = leaseUntil`, and `attempt += 1`.
   * Order: priority descending, then `runAt`, then enqueue order. Two concurrent claims never
   * return the same job. A reclaim can return a job whose `attempt` now exceeds `maxAttempts` (its
   * earlier leases expired): the engine dead-letters such a job with that lease instead of running it.
   * Likewise a reclaimed job whose cancel was requested (`cancelRequestedAt`) is ended with
   * {@link completeCancel} instead of run: its holder died before it could end it.
   *
   * Flow limits (`req.flow`) are enforced here, atomically across every engine sharing the store:
   * a job whose name or key is at its limit (or held by {@link holdFlow}) is skipped and stays as
   * it is, and what held jobs back is reported to `req.onHeld`. A lease that expires frees its
   * concurrency slot. Jobs of a grouped name are taken key by key in turn (one key's backlog never
   * delays another key), and jobs of names with limits may be taken out of claim order relative
   * to other names' jobs (never within one name or key).
   */
  claim(req: ClaimRequest): Promise<JobRecord[]>;

  /**
   * Stops every start of `name` — or, with `key`, of the jobs with that `rateLimitKey` — until
   * `until`, in every engine whose claims list the name in `flow` (a `RateLimitedError`). A later
   * hold extends it, an earlier one changes nothing.
   */
  holdFlow(req: FlowHoldRecord & { now: Date }): Promise<void>;

  /**
   * The holds of {@link holdFlow} still in force at `now`. Engines read it every poll interval and
   * list the held names in their claims' `flow`, so a hold made by any process applies to them.
   */
  flowHolds(now: Date): Promise<FlowHoldRecord[]>;

  /**
   * The flow limits the store knows (from engines' claims) and their use at `now`, in
   * {@link compareFlowUsage} order, at most {@link MAX_FLOW_USAGE}: per name its global concurrency
   * and rate limit; per group or rate-limit key in use (or held) its own. For operators' views.
   */
  flowUsage(now: Date): Promise<FlowUsage[]>;

  /**
   * Heartbeat: moves `lease.until` to `until`. Fenced; a lease that already ran out at `now` is lost
   * (`LEASE_LOST`) even if nobody took the job over — its flow slot may be another run's now. Resolves `'cancel-requested'` (having
   * extended the lease all the same) when a cancel of the job was requested: the holder then aborts
   * its handler and, once it returned, ends the job with {@link completeCancel}.
   */
  extendLease(lease: LeaseRef, until: Date, now: Date): Promise<LeaseExtension>;

  /**
   * Batched heartbeats: {@link extendLease} for many leases in one round trip where the store can,
   * each fenced on its own lease. One outcome per item, in order: `'extended'`, `'cancel-requested'`
   * (extended, and the job's cancel was requested), `'lost'` (the lease is no longer held — taken
   * over, finished, unknown, or already run out at `now`: nothing changed), or `{ error }` when the
   * store refused that item alone. A lease's flow slots move with it, as with `extendLease`.
   * Rejects only when the call as a whole failed (bad input, an unreachable store): then any item
   * may or may not be extended.
   */
  heartbeatMany(items: HeartbeatItem[], now: Date): Promise<HeartbeatOutcome[]>;

  /** `running → completed` with the handler's result. Fenced. May run inside a transaction. */
  complete(lease: LeaseRef, outcome: { result?: unknown; now: Date; session?: unknown }): Promise<void>;

  /**
   * Group commit: `running → completed` for many jobs in one round trip where the store can, each
   * fenced on its own lease. One outcome per item, in order: `'completed'`, `'lost'` (the lease is
   * no longer held — taken over, finished or unknown: nothing changed), `'cancelled'` (its cancel
   * was requested: nothing changed, the holder ends it with {@link completeCancel}), or
   * `{ error }` when the store refused that item alone (e.g. over its size limit). Rejects only when
   * the call as a whole failed (bad input, an unreachable store): then any item may or may not be
   * completed, and a retry of an applied one reports `'lost'`. Never inside a transaction (a
   * `ctx.transaction` completes its job with {@link complete} and the session).
   */
  completeMany(items: CompletionItem[], now: Date): Promise<CompletionOutcome[]>;

  /** `running → queued` at `runAt` after a failed attempt; `error` is appended to the history. Fenced. */
  retry(lease: LeaseRef, outcome: { runAt: Date; error: ErrorRecord; now: Date }): Promise<void>;

  /**
   * `running → dead`: moves the job into the dead-letter collection with its full error history
   * (`error`, when given, is appended first). Fenced. The id stays the same; the idempotency key is
   * freed.
   */
  deadLetter(lease: LeaseRef, outcome: { reason: string; error?: ErrorRecord; now: Date }): Promise<void>;

  /** `running → queued` at `now`, giving the attempt back (graceful shutdown). Fenced. */
  release(lease: LeaseRef, now: Date): Promise<void>;

  /**
   * `running → queued` at `runAt`, giving the attempt back: a durable sleep. `step`, when given, is
   * recorded (first write wins) in the same operation. Fenced.
   */
  sleep(lease: LeaseRef, req: { runAt: Date; step?: StepRecord; now: Date }): Promise<void>;

  /**
   * `running → waiting` for a signal and/or child jobs, giving the attempt back; `timeoutAt`
   * (if any) becomes `runAt`, so the job is claimable again then. Fenced.
   * Returns `'signal-pending'` and changes nothing when the awaited signal is already stored on the
   * job (the caller then consumes it instead of waiting).
   */
  wait(lease: LeaseRef, req: { for: WaitCondition; timeoutAt?: Date; step?: StepRecord; now: Date }): Promise<'waiting' | 'signal-pending'>;

  /**
   * Settles the dependents of finished jobs (jobs enqueued with them in `dependsOn`). For each
   * dependent still `waiting` for a finished dependency: a completed one is met; a dead or
   * cancelled one is met under `onDependencyFailure: 'run'`, and otherwise ends the dependent
   * (`dependencyFailed` → `dead` with `DEPENDENCY_FAILED`, `dependencyCancelled` → `cancelled`). A
   * dependent whose last unmet dependency is met becomes `queued` at `now` (`dependenciesMet`).
   * Dependents ended this way are settled in turn, in the same call.
   *
   * With `jobIds`: those jobs (ids of jobs not finished, or without dependents, are skipped).
   * Without: up to `limit` (default 100) finished jobs whose dependents are not settled yet, found
   * from an index (a store may settle them earlier, in the write that finished them; the engine
   * calls this after the jobs it finished, and every poll interval to finish what a crash left).
   * Idempotent: a dependency is met once however often it is settled. Costs O(dependents), reading
   * no unrelated job. Resolves the number of finished jobs whose dependents it settled.
   */
  settleDependents(req: { now: Date; jobIds?: string[]; limit?: number }): Promise<number>;

  /**
   * Wakes a `waiting` job (`→ queued`, `runAt = now`). Used when a child job finishes. Not fenced:
   * it is conditional on the job still waiting. Returns whether it woke the job.
   */
  wake(jobId: string, now: Date): Promise<boolean>;

  /**
   * Whether job `jobId` is `waiting` for job `awaitedId` (it is in its `waitingFor.jobs`).
   * Answered without handing out the job: a parent waiting for thousands of children is not read
   * once per child that finishes.
   */
  isWaitingFor(jobId: string, awaitedId: string): Promise<boolean>;

  /**
   * The id of one child of `parentId` (a job enqueued with that `parentId`) that is still
   * `queued`, `running` or `waiting`, or null when none is. Answered from an index, reading no
   * job, so each finishing child of a fan-out can ask it cheaply.
   */
  findActiveChild(parentId: string): Promise<string | null>;

  /**
   * Records a step result. Fenced. First write wins: returns the stored record, which is the
   * existing one when a step of that name was already recorded. Only a `completed` step is final:
   * a `pending` one (a sleep or wait in progress) is replaced by the next write of that name.
   */
  recordStep(lease: LeaseRef, step: StepRecord, now: Date): Promise<StepRecord>;

  /**
   * Atomically takes the oldest stored signal named `signal` off the job and records it as the
   * completed step `stepName` (result = the signal's data, `signalId` = its id if it has one). Fenced. Returns the step, or `null`
   * when no such signal is stored (nothing changes). When `stepName` is already completed it returns
   * that step and consumes nothing (first write wins, as in `recordStep`).
   */
  consumeSignal(lease: LeaseRef, req: { signal: string; stepName: string; now: Date }): Promise<StepRecord | null>;

  /**
   * Stores a signal on a job that has not finished; if the job is `waiting` for it, it becomes
   * `queued` at `now` in the same operation. Returns false when the job does not exist or has finished.
   * With an `id`: when a signal with that id is stored on the job, or was taken by a run (a
   * `signal` step with that `signalId`), nothing is stored and it returns true. A job already
   * holding `MAX_PENDING_SIGNALS` signals refuses it with a `TooManySignalsError`
   * (`TOO_MANY_SIGNALS`), storing nothing.
   */
  signal(jobId: string, req: { name: string; data: unknown; now: Date; id?: string }): Promise<boolean>;

  /**
   * Stores a new `pending` wait token (`token.status` must be `'pending'`) created by the run
   * holding `lease`; `token.jobId` must be the lease's job. Fenced: a run that lost its lease stores
   * nothing and gets `LEASE_LOST`. An id already stored is refused with `INVALID_ARGUMENT`.
   *
   * Retention: tokens never outlive their job's retention. A store that removes finished jobs
   * removes their settled tokens too: MemoryStore with the job; MongoStore (whose TTL monitor
   * deletes jobs one by one) with a TTL index of its own on `settledAt`, the retention of
   * completed jobs after the token was settled. A pending token is never removed that way: ending
   * its job ends it (`endWaitTokens`), and then it counts as settled.
   */
  createWaitToken(lease: LeaseRef, token: WaitTokenRecord, now: Date): Promise<void>;

  /** A wait token by id, or null when no token has this id. */
  getWaitToken(id: string): Promise<WaitTokenRecord | null>;

  /**
   * Settles a `pending` wait token, conditionally (the first settlement wins): `completed` or
   * `rejected` only before its `timeoutAt`, `timed-out` only from then on. Then, whether this call
   * settled it or an earlier one did, delivers the outcome to the token's job as the signal
   * `waitTokenSignal``(id)` sent with that same signal id (so a repeated delivery stores
   * nothing; a job waiting for it is queued at `now`; a finished job is left alone). That second
   * write is what a repeated call repairs, should a process die between the two. Null when no
   * token has this id. A `completed` or `rejected` settlement of a pending token whose job has
   * ended (completed, dead, cancelled) or is gone ends it `cancelled` instead (`reason` from
   * `endedJobReason`, nothing delivered) and returns `settled: false`: nobody waits for it.
   */
  settleWaitToken(id: string, req: { settlement: WaitTokenSettlement; now: Date }): Promise<WaitTokenSettleOutcome | null>;

  /**
   * Ends the `pending` wait tokens of a job that has ended (completed, dead, cancelled) or is gone:
   * each becomes `cancelled` at `now` (`settledAt`, `reason` from `endedJobReason`), so a later
   * completion resumes nothing and says so, and retention can remove it. The tokens of a job that
   * has not ended are left alone (0). Returns how many it ended; a second call ends none.
   */
  endWaitTokens(jobId: string, now: Date): Promise<number>;

  /** The wait tokens of a job, oldest first (every status). */
  listWaitTokens(jobId: string): Promise<WaitTokenRecord[]>;

  /**
   * Appends `ctx.log` lines to the job's tail, then keeps its last `keep` lines (1 to
   * `MAX_JOB_LOG_LINES`; default `DEFAULT_JOB_LOG_LINES`): the engine, which holds the lease and so
   * knows the tail, picks `keep` to hold the bytes cap too. Lines are checked with `jobLogProblem`;
   * an invalid batch or `keep` is refused with `INVALID_ARGUMENT` and changes nothing. Fenced.
   */
  appendLogs(lease: LeaseRef, lines: JobLogLine[], now: Date, keep?: number): Promise<void>;

  /** Saves progress reported by a handler. Fenced. */
  progress(lease: LeaseRef, value: unknown, now: Date): Promise<void>;

  /**
   * A job by id, from the jobs or the dead letters (status `dead`); null if unknown. With
   * `{ values: false }` a payload or result kept outside the record is not loaded (`payload` /
   * `result` undefined, `offloadedPayload` / `offloadedResult` set), as lists return it: for
   * readers that only need the job's state (a dashboard's live updates).
   */
  getJob(id: string, opts?: { values?: boolean }): Promise<JobRecord | null>;

  /**
   * Jobs matching a filter (newest first), for operators, tests and the scheduler's overlap check.
   * Dead jobs live in the dead-letter collection and are listed by `listDeadLetters`, not here.
   */
  listJobs(filter: JobFilter): Promise<JobRecord[]>;

  /** Counts per queue and status (statuses with no jobs may be left out); dead letters count in `deadLetters` only. */
  stats(): Promise<StoreStats>;

  /** Dead letters matching a filter, newest first. */
  listDeadLetters(filter: DeadLetterFilter): Promise<DeadLetter[]>;

  /**
   * `dead → queued`: puts a dead job back, same id, attempts reset, `runAt = now`; its errors and
   * steps are kept, so a replayed workflow does not redo completed side effects. Conditional:
   * two concurrent replays of one dead letter make one job. Returns the job id, or null when the
   * dead letter no longer exists (already replayed or purged).
   */
  replayDeadLetter(id: string, now: Date): Promise<string | null>;

  /** Deletes dead letters matching the filter; returns how many. */
  purgeDeadLetters(filter: DeadLetterFilter): Promise<number>;

  /**
   * Returns the schedule's state, creating it (`lastFireAt: null`, `firstSeenAt: now`) the first
   * time a schedule of that name is seen.
   */
  ensureSchedule(name: string, now: Date): Promise<ScheduleRecord>;

  /**
   * Compare-and-set of `lastFireAt`: succeeds only if it still equals `expected`. Concurrent
   * schedulers on one store race here; exactly one wins each slot. `fire`, when given, becomes the
   * schedule's `firing` in the same write (the winner then enqueues those slots); without it
   * `firing` is left as it is.
   */
  advanceSchedule(name: string, expected: Date | null, next: Date, now: Date, fire?: Date[]): Promise<boolean>;

  /**
   * Clears `firing` (the slots' jobs are enqueued), only if `lastFireAt` still equals `firedUpTo`:
   * a later advance's slots are never cleared by mistake. Returns whether it cleared them.
   */
  markScheduleFired(name: string, firedUpTo: Date, now: Date): Promise<boolean>;

  /** Pauses or resumes a schedule. Returns false if the schedule does not exist. */
  setSchedulePaused(name: string, paused: boolean, now: Date): Promise<boolean>;

  /** Every schedule's state. */
  listSchedules(): Promise<ScheduleRecord[]>;

  // ---- operating jobs (0.2, OPERATIONS.md): none of these needs a running engine ------------------

  /**
   * Summaries of the jobs matching `query`, dead ones included, in list order: newest `createdAt`
   * first, ties by id descending; a page starts after `query.after`. Stores answer it from indexes,
   * so a page costs the same however many jobs there are.
   */
  listJobPage(query: JobPageQuery): Promise<JobSummary[]>;

  /**
   * Cancels a job: `queued` or `waiting` → `cancelled` at once (`finishedAt = now`); `running` →
   * flagged (`cancelRequestedAt = now`: from then on the lease holder's writes other than
   * {@link extendLease} and {@link completeCancel} are refused with a `CANCELLED` error), or
   * `cancelled` at once when its lease has already expired. A finished job is unchanged. Conditional
   * on the status it read, so it never races a transition. Null when no job has this id.
   */
  cancelJob(id: string, req: { reason?: string; now: Date }): Promise<CancelOutcome | null>;

  /** `running → cancelled`: the lease holder ends a job whose cancel was requested. Fenced (also after the request). */
  completeCancel(lease: LeaseRef, now: Date): Promise<void>;

  /**
   * `dead` or `cancelled` → `queued`, same id, attempts reset, `runAt = now`, steps and errors kept
   * (a dead job as {@link replayDeadLetter}). Any other status is unchanged. Null when no job has this id.
   */
  retryJob(id: string, now: Date): Promise<RetryOutcome | null>;

  /**
   * `queued` → `queued` due now (the `runJobNow` row): a job whose `runAt` is after `now` (delayed, or
   * waiting out a retry's backoff) gets `runAt = now`, so the next claim may take it. Unchanged: a
   * job not `queued`, already due, or asleep in a workflow (`sleepUntil` after `now`: woken early it
   * would sleep again). Conditional on what it read, so it never races a claim. Null when no job has this id.
   */
  runJobNow(id: string, now: Date): Promise<RunNowOutcome | null>;

  /**
   * Deletes a finished job (`completed`, `dead` or `cancelled`), freeing its idempotency key, and
   * its wait tokens. Null when no job has this id.
   */
  removeJob(id: string, now: Date): Promise<RemoveOutcome | null>;

  /**
   * Replays every dead letter matching `filter` (as {@link replayDeadLetter}, one by one, newest
   * first); letters that cannot be replayed are reported and left as they are. `onProgress` is
   * called with the number handled so far after each batch.
   */
  replayDeadLetters(filter: DeadLetterFilter, req: { now: Date; onProgress?: (handled: number) => void }): Promise<DeadLetterReplayReport>;

  /** Pauses or resumes a queue; persisted, so every engine sharing the store sees it. Enqueue is unaffected. */
  setQueuePaused(queue: string, paused: boolean, now: Date): Promise<void>;

  /** The names of the paused queues. Engines read it every poll interval and do not claim from them. */
  pausedQueues(): Promise<string[]>;

  /**
   * Every queue that has jobs, dead letters or a pause record, by name, with counts per status; with
   * `now`, also how many queued jobs sleep in a workflow at `now` (`sleeping`).
   */
  listQueues(now?: Date): Promise<QueueSummary[]>;

  /**
   * How many jobs now `completed` finished, or now `dead` died, at an instant in `[from, to)`:
   * counted from an index, reading no job (the dashboard's chart of the last hour asks it per
   * bucket). Optional. Resolves null when this store cannot count them without reading every such
   * job (a MongoStore that keeps completed jobs forever has no index on their finish time).
   */
  countFinished?(req: FinishedCountQuery): Promise<number | null>;

  /**
   * The earliest instant after `now` at which a job that is not claimable at `now` becomes
   * claimable with time alone: a `queued` job's `runAt` (delayed, backing off, asleep), a `waiting`
   * job's timeout, a `running` job's lease expiry (`lease.until` + 1 ms); null when none will.
   * A store may answer earlier than that (an instant at which nothing becomes claimable after all),
   * never later. Optional. For harnesses that move a fake clock from one due instant to the next
   * (`TestLoom.advance`): one bounded read instead of listing every live job.
   */
  nextClaimableAt?(now: Date): Promise<Date | null>;

  /**
   * One queue's time series (the dashboard's 24-hour and 7-day charts): the buckets of `resolution`
   * starting in `[from, to)` that hold anything, oldest first. Stores add to them in the writes runs
   * make anyway: a claim counts a start and its wait (`now - runAt`), a completion counts
   * `completed`, a retry `failed`, a dead-lettering `failed` and `dead`; `listQueues(now)` records
   * each queue's queued count as a depth sample. Buckets are deleted after their retention
   * (`SERIES_RESOLUTIONS`). Counts are approximate across processes: a MongoStore writes its
   * increments once a minute (before this read, its own), so another process's last minute may be
   * missing, and a process that dies loses them. Optional: stores without it draw no charts.
   */
  queueSeries?(req: QueueSeriesQuery): Promise<QueueSeriesBucket[]>;

  // ---- batches (0.3, FLOWS.md) ---------------------------------------------------------------------

  /**
   * Stores a batch and its members (`queued`, each with `batchId`), all or nothing. The batch keeps
   * a counter per way a member ends; every transition that ends a member (complete, dead-letter,
   * cancel) moves its counter in the same atomic operation, reading no other member, and a dead or
   * cancelled member queued again (replay, `retryJob`) takes it back. The transition that ends the
   * last pending member sets `finishedAt` and enqueues the callbacks that apply (`complete` always,
   * `success` when none died or was cancelled, `failure` otherwise), each with `batchCallback` and
   * the idempotency key `batch:<id>:<on>`, in that same operation: each runs exactly once, however
   * members race and wherever a process dies. From then on the batch's counts are frozen. A batch
   * without members finishes at once. Members must have no idempotency or debounce key.
   * A store that cannot make these writes atomic (MongoDB without transactions) refuses with
   * `TRANSACTIONS_UNSUPPORTED`, storing nothing.
   */
  createBatch(batch: NewBatch, opts: { now: Date }): Promise<CreatedBatch>;

  /** A batch's counts, or null when no batch has this id. Reads the batch alone, never its members. */
  getBatch(id: string): Promise<BatchRecord | null>;

  /** The ids of the batch's members now `dead` or `cancelled` (from an index: no scan of the batch); `[]` for an unknown batch. */
  batchFailures(id: string): Promise<string[]>;

  /**
   * Records what a schedule enqueues (creating the schedule as {@link ensureSchedule} does), so
   * tools without the job classes can list, resume and trigger it.
   */
  describeSchedule(name: string, description: ScheduleDescription, now: Date): Promise<void>;

  // ---- engine presence (issue 34): which engines are alive, what they serve and run --------------

  /**
   * Stores an engine's presence, replacing the row with the same `id` (one row per engine). The
   * engine writes it every beat; `presence.lastSeenAt` is the write's `now`.
   */
  recordPresence(presence: WorkerPresence): Promise<void>;

  /** Deletes an engine's row (a clean stop). Resolves whether there was one. */
  removePresence(id: string): Promise<boolean>;

  /**
   * The engines whose rows have not expired at `now` (`expiresAt > now`), by id, at most
   * `MAX_LISTED_WORKERS`. Expired rows are never listed, whether or not the store has deleted them yet.
   */
  listPresence(now: Date): Promise<WorkerPresence[]>;

  /**
   * Runs `fn` in a transaction: store operations given its `session` commit or abort together with
   * the caller's own writes. Stores without transactions omit this method; the engine then refuses
   * `{ session }` and `ctx.transaction` with a clear error.
   */
  withTransaction?<T>(fn: (session: unknown) => Promise<T>): Promise<T>;

  /**
   * Whether a failed operation may succeed if tried again (a network error, a failover, a write
   * conflict). The engine retries transient failures of outcome writes within the run's lease and
   * treats any other failure as final: a completion the store can never hold (e.g. a document over
   * its size limit) fails the attempt instead of being retried until the lease runs out. Optional:
   * without it every failure counts as transient.
   */
  isTransientError?(error: unknown): boolean;

  /**
   * Calls `listener` soon after jobs are enqueued by any process (e.g. a MongoDB change stream), so
   * idle workers wake without waiting for the next poll. `id`, when given, is the job's: an engine
   * recognises the announcement of a job it enqueued itself and does not claim again for it.
   * Optional; returns an unsubscribe function.
   */
  subscribe?(listener: (event: { queue: string; runAt: Date; id?: string }) => void): () => void;

  /**
   * The database's current time, read fresh in one round trip (never cached, never the `now` an
   * engine passed in). Leases are written and judged with the engines' clocks, so an engine whose
   * clock is far behind the others would take over jobs whose lease has not expired yet (two runs
   * at once). The engine measures its skew against this one clock that every engine of the store
   * shares (its own clock before and after the call brackets the answer) and refuses to claim
   * when the skew is too large. Optional: a store that lives in the engine's own process
   * (MemoryStore) has no other clock and omits it. This is the one operation that reads a clock,
   * and it is the database's, not the process's.
   */
  serverTime?(): Promise<Date>;
}

/**
 * How often a started engine calls {@link JobStore.maintain}: every hour. MongoStore's sweep waits
 * an hour before it judges a file anyway, and each round is a wake-up of the engine's clock: a
 * `FakeClock` moved through days steps through every one of them.
 */
export const STORE_MAINTENANCE_MS = 60 * 60_000;

/** What {@link JobStore.countFinished} counts: jobs that reached `status` in `[from, to)`. */
export interface FinishedCountQuery {
  status: 'completed' | 'dead';
  from: Date;
  to: Date;
}

/** One completion of {@link JobStore.completeMany}: the run's lease and its handler's result. */
export interface CompletionItem {
  lease: LeaseRef;
  result?: unknown;
  /**
   * The run's last `ctx.log` lines, appended in the same fenced write as the completion (as
   * {@link JobStore.appendLogs} would: then the tail's last `keep` lines are kept). Invalid lines
   * or `keep` make this item's outcome an `INVALID_ARGUMENT` error; the other items stand.
   */
  logs?: { lines: JobLogLine[]; keep: number };
}

/** How one completion of {@link JobStore.completeMany} ended. */
export type CompletionOutcome = 'completed' | 'lost' | 'cancelled' | { error: Error };

/** One heartbeat of {@link JobStore.heartbeatMany}: the run's lease and its new end. */
export interface HeartbeatItem {
  lease: LeaseRef;
  until: Date;
}

/** How one heartbeat of {@link JobStore.heartbeatMany} ended. */
export type HeartbeatOutcome = LeaseExtension | 'lost' | { error: Error };

/** What a lease extension found: `'extended'`, or `'cancel-requested'` (extended, and the job's cancel was requested). */
export type LeaseExtension = 'extended' | 'cancel-requested';

/** What a claim asks for. */
export interface ClaimRequest {
  /** Identifies the engine instance (stored as `lease.owner`). */
  owner: string;
  /** Only jobs in these queues. */
  queues: string[];
  /** Only jobs with these names (the ones this engine can run). */
  names: string[];
  /** Skip jobs with these names (their per-job concurrency is used up in this engine). */
  excludeNames?: string[];
  /** At most this many jobs (>= 1). */
  limit: number;
  /** The new lease's expiry. */
  leaseUntil: Date;
  now: Date;
  /** The flow limits of names in `names` that have any (or a hold to respect); other names are unlimited. */
  flow?: FlowLimits[];
  /** Told what held due jobs back in this claim (called at most once per claim, never with an empty list). */
  onHeld?: (holds: FlowHold[]) => void;
}

/** Filter for {@link JobStore.listJobs}. All fields are optional and combined with AND. */
export interface JobFilter {
  name?: string;
  queue?: string;
  status?: JobStatus[];
  parentId?: string;
  idempotencyKey?: string;
  /** Only cron runs (jobs with `scheduledFor`) for a slot before this instant. */
  scheduledBefore?: Date;
  limit?: number;
}

/** Filter for dead letters. */
export interface DeadLetterFilter {
  name?: string;
  queue?: string;
  /** Only those that died before this instant. */
  before?: Date;
  limit?: number;
}
