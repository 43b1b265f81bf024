import { MongoClient, type ClientSession, type ObjectId } from 'mongodb';
import {
  LoomError,
  type BatchRecord,
  type CreatedBatch,
  type NewBatch,
  hasDependencies,
  type CancelOutcome,
  type ClaimRequest,
  type DeadLetter,
  type DeadLetterFilter,
  type FinishedCountQuery,
  type DeadLetterReplayReport,
  type EnqueueResult,
  type ErrorRecord,
  type FlowHoldRecord,
  type FlowUsage,
  type JobFilter,
  type JobPageQuery,
  type JobLogLine,
  type JobRecord,
  type JobSummary,
  type JobStore,
  type LeaseExtension,
  type LeaseRef,
  type JobStatus,
  type CompletionItem,
  type CompletionOutcome,
  type HeartbeatItem,
  type HeartbeatOutcome,
  type NewJob,
  type QueueSummary,
  type RemoveOutcome,
  type RunNowOutcome,
  type RetryOutcome,
  type ScheduleDescription,
  type ScheduleRecord,
  type StepRecord,
  type StoreStats,
  type WaitCondition,
  type WaitTokenRecord,
  type WaitTokenSettlement,
  type WaitTokenSettleOutcome,
  type WorkerPresence,
  type QueueSeriesBucket,
  type QueueSeriesQuery,
  type PayloadLimits,
} from '@loom/core';
import { listLimit, parseJobId, requireDate, requireString, requireStrings } from './arguments.js';
import { MongoBatches } from './batches/batches.js';
import { claimJobs, giveBack } from './claims/claims.js';
import { MongoFlowClaims } from './claims/flow-claims.js';
import { JobsHeldByTransactions } from './claims/held-jobs.js';
import { inTransaction, openCollections, type StoreCollections } from './connection/collections.js';
import { detectDeployment, type Deployment } from './connection/deployment.js';
import { InsertSubscriptions, type InsertListener } from './connection/insert-watcher.js';
import { withinReach } from './connection/reachability.js';
import { readServerTime } from './connection/server-time.js';
import { isTransientMongoError } from './connection/transient-errors.js';
import { moveToDeadLetters, reconcileDeadLetters, replayDeadLetter, type MoveContext, type ReconcileReport } from './dead-letters/dead-letters.js';
import { enqueueJobs } from './enqueue/enqueue.js';
import { enqueueWithDependencies, settleDependents, type DependentRoutes } from './dependencies/dependencies.js';
import { FlowPermits } from './flow/flow-permits.js';
import { countFinished } from './operations/finished-counts.js';
import { nextClaimableAt } from './operations/next-claimable.js';
import { completeCancelUpdate, JobControl, retryCancelledUpdate } from './operations/job-control.js';
import { QueueRepository } from './operations/queues.js';
import { CompletedCounts, COUNTS_RETENTION_INDEX, countsIndexPlan } from './operations/completed-counts.js';
import { ScheduleRepository } from './operations/schedules.js';
import { resolveOptions, type MongoStoreOptions, type ResolvedOptions } from './options.js';
import { activeChildFilter, fencedFilter, jobListFilter, waitingForJobFilter, waitingFilter } from './schema/filters.js';
import { ensureIndexes, indexPlan, RETENTION_INDEX } from './schema/indexes.js';
import { OffloadedValues, valueChunksIndexPlan, valueFilesIndexPlan } from './payloads/offloaded-values.js';
import { toDeadJobRecord, toJobRecord } from './schema/records.js';
import { completeUpdate, extendLeaseUpdate, appendLogsUpdate, progressUpdate, requeueUpdate, retryUpdate, waitUpdate, wakeUpdate } from './schema/updates.js';
import { StoreArgumentError, transactionsUnsupported } from './store-errors.js';
import { completeMany } from './writes/complete-many.js';
import { settledAtMost } from './settled-at-most.js';
import { completeKeepingHolds, type CompletionFacts } from './writes/completions.js';
import { FencedWrites } from './writes/fenced-writes.js';
import { heartbeatMany } from './writes/heartbeat-many.js';
import { releaseChildren, releaseChildrenOfRun, releaseIfParentFinished } from './writes/retention-holds.js';
import { storeSignal } from './writes/signals.js';
import { tokenIndexPlan, TOKENS_RETENTION_INDEX, WaitTokens } from './writes/wait-tokens.js';
import { MongoPresence } from './operations/presence.js';
import { MongoQueueSeries, SERIES_READ_INDEX, seriesIndexPlan } from './operations/queue-series.js';
import { claimablePartitions, PartitionClaims } from './partitions/partition-claims.js';
import { Partitions, routeFilter, type Route } from './partitions/partitions.js';
import { JobRoutes, partitionJobs, routedJobs } from './partitions/routed-jobs.js';
import { verifyShardKeys, type ShardingState } from './partitions/shard-keys.js';
import type { Collection } from 'mongodb';
import type { JobDocument } from './schema/documents.js';

/**
 * How many collections `init()` checks at once. Through a 20 ms round trip a restart's `init()` took
 * 322 ms one at a time, 210 ms three at a time and 204 ms nine at a time; but the driver keeps
 * every connection it opened, and nine at once left nine pooled connections for the process's life
 * where three stay within the four an engine holds anyway (bench/tools/start-round-trips.mjs).
 */
const INIT_WIDTH = 3;

/**
 * Loom's durable {@link JobStore} on MongoDB.
 *
 * ```ts
 * const store = new MongoStore({ url: 'mongodb://127.0.0.1:27017/?replicaSet=rs0', database: 'app' });
 * const loom = await Loom.create({ container, store }); // init(): indexes, reconciliation
 * ```
 *
 * Claims are one atomic `findOneAndUpdate` on a partial index; every later write is fenced by
 * `_id` + lease token + `running`; idempotency keys sit behind a unique partial index; dead letters
 * live in their own collection. See the package README for the schema and the guarantees.
 */
export class MongoStore implements JobStore {
  /** How often the engine should poll when change streams are unavailable, in ms. */
  readonly pollIntervalMs: number;
  private readonly options: ResolvedOptions;
  private readonly ownsClient: boolean;
  private readonly collections: StoreCollections;
  private readonly schedules: ScheduleRepository;
  private fenced: FencedWrites;
  private readonly control: JobControl;
  private readonly queues: QueueRepository;
  private readonly permits: FlowPermits;
  private readonly batches: MongoBatches;
  private flowClaims: MongoFlowClaims;
  /** Claimable jobs an open transaction holds, left out of claims until it is gone. */
  private heldJobs: JobsHeldByTransactions;
  private deployment?: Promise<Deployment>;
  private initializing?: Promise<void>;
  private readonly subscriptions: InsertSubscriptions;
  private readonly completedCounts: CompletedCounts;
  /** The queue of each run this store claimed, by lease token, until the run ends: what its completion is counted under. */
  private readonly runQueues = new Map<string, string>();
  private readonly waitTokens: WaitTokens;
  private readonly presence: MongoPresence;
  private readonly series: MongoQueueSeries;
  /** Partitioned queues (option `partitions`) and sharding: see partitions/. */
  private readonly partitions: Partitions;
  private readonly routes = new JobRoutes();
  private readonly partitionClaims: PartitionClaims;
  /** The jobs collection narrowed to one partition, with its flow claims, per partition claimed. */
  private readonly partitionViews = new Map<string, { jobs: Collection<JobDocument>; flow: MongoFlowClaims }>();
  /** Claims, enqueues and writes by id name a job's queue and partition: some queue is partitioned, or the jobs collection is sharded. */
  private routing = false;
  private sharding: ShardingState = { mongos: false, jobsSharded: false };
  /** Payloads and results over `offloadThreshold`, in the payload bucket (payloads/offloaded-values.ts). */
  private readonly values: OffloadedValues;
  /** See `JobStore.payloadLimits`: options `maxPayloadSize` and `offloadThreshold`. */
  readonly payloadLimits: PayloadLimits;

  constructor(options: MongoStoreOptions) {
    this.options = resolveOptions(options);
    this.pollIntervalMs = this.options.pollIntervalMs;
    this.ownsClient = options.client === undefined;
    const client = options.client ?? new MongoClient(options.url!, options.clientOptions);
    this.collections = openCollections(client, this.options);
    this.partitions = new Partitions(this.options.partitions);
    this.partitionClaims = new PartitionClaims(this.partitions);
    this.routing = this.partitions.any;
    // Partitioned: every write by id carries the job's queue and partition (see routed-jobs.ts).
    if (this.routing) this.collections.jobs = routedJobs(this.collections.jobs, this.routes);
    this.payloadLimits = this.options.payloadLimits;
    this.values = new OffloadedValues(
      this.collections.payloadFiles,
      this.collections.payloadChunks,
      () => this.collections.jobs,
      this.collections.deadLetters,
      this.payloadLimits,
      this.options.logger,
    );
    this.schedules = new ScheduleRepository(this.collections.schedules);
    this.fenced = new FencedWrites(this.collections.jobs);
    this.waitTokens = new WaitTokens(this.collections.waitTokens, this.collections.jobs, this.fenced, (jobId) => this.endedJobStatus(jobId), {
      get: (id) => this.jobRoutes()?.get(id),
      learn: (id, route) => this.jobRoutes()?.learn(id, route),
    });
    this.presence = new MongoPresence(this.collections.workers);
    this.series = new MongoQueueSeries(this.collections.series, this.options.logger);

    this.completedCounts = new CompletedCounts(this.collections.counts, this.options.retentionSeconds.completed, this.options.logger);
    this.queues = new QueueRepository(this.collections, this.completedCounts);
    this.batches = new MongoBatches(this.collections, this.values, (doc) => {
      if (this.routing) this.placeJob(doc);
    });
    this.permits = new FlowPermits(this.collections.flow, this.options.logger);
    this.subscriptions = new InsertSubscriptions(this.collections.jobInserts, this.options.logger, () => this.getDeployment());
    [this.fenced, this.heldJobs, this.flowClaims] = this.onJobs();
    this.control = new JobControl(
      this.collections,
      () => this.moveContext(),
      (docs, now) => this.permits.heldBy(docs, now, () => this.queues.paused()),
    );
  }

  /** The parts holding the jobs collection itself (rebuilt when init() finds a sharded cluster and routes its commands). */
  private onJobs(): [FencedWrites, JobsHeldByTransactions, MongoFlowClaims] {
    const { jobs, transactions } = this.collections;
    return [
      new FencedWrites(jobs),
      new JobsHeldByTransactions(transactions, jobs, this.options.logger),
      new MongoFlowClaims(jobs, this.permits, this.options.logger, this.options.claimTimeoutMs),
    ];
  }

  /** The MongoDB client: use it for your own collections so they can share Loom's transactions. */
  get client(): MongoClient {
    return this.collections.client;
  }

  /** Connects, creates and verifies indexes, and finishes moves a crash interrupted. Idempotent. */
  async init(): Promise<void> {
    this.initializing ??= this.initialize().catch((err: unknown) => {
      this.initializing = undefined; // a later init() tries again
      throw err;
    });
    return this.initializing;
  }

  private async initialize(): Promise<void> {
    const { client } = this.collections;
    const deployment = await withinReach(
      client,
      this.options.connectTimeoutMs,
      async () => {
        if (this.ownsClient) await client.connect();
        return this.getDeployment();
      },
      // Our own client stops trying (a later init() connects again); yours is yours to close.
      () => void (this.ownsClient ? client.close().catch(() => {}) : undefined),
    );
    this.sharding = await verifyShardKeys(client, this.options, deployment);
    if (this.sharding.mongos && !this.routing) {
      // On a sharded cluster writes by id name their job's shard key, whatever the partitions.
      this.routing = true;
      this.collections.jobs = routedJobs(this.collections.jobs, this.routes);
      [this.fenced, this.heldJobs, this.flowClaims] = this.onJobs();
    }
    const plan = indexPlan(this.options, this.sharding);
    const { logger, retentionSeconds } = this.options;
    const c = this.collections;
    // The collections' indexes are independent: their listings (and creations) go out a few at a
    // time (INIT_WIDTH). The first failure in this order is the one reported.
    const outcomes = await settledAtMost(INIT_WIDTH, [
      () => ensureIndexes(c.jobs, plan.jobs, RETENTION_INDEX.jobs, logger),
      () => ensureIndexes(c.deadLetters, plan.deadLetters, RETENTION_INDEX.deadLetters, logger),
      () => ensureIndexes(c.flow, plan.flow, '', logger),
      () => ensureIndexes(c.workers, plan.workers, '', logger),
      () => ensureIndexes(c.series, seriesIndexPlan(), SERIES_READ_INDEX, logger),
      () => ensureIndexes(c.counts, countsIndexPlan(retentionSeconds.completed), COUNTS_RETENTION_INDEX, logger),
      () => ensureIndexes(c.waitTokens, tokenIndexPlan(retentionSeconds.completed), TOKENS_RETENTION_INDEX, logger),
      () => ensureIndexes(c.payloadFiles, valueFilesIndexPlan(), '', logger),
      () => ensureIndexes(c.payloadChunks, valueChunksIndexPlan(), '', logger),
    ]);
    const failed = outcomes.find((o) => o.status === 'rejected');
    if (failed) throw failed.reason;
    await this.reconcile();
  }

  /** Resolves jobs left in both the jobs and dead-letter collections by an interrupted move. */
  async reconcile(): Promise<ReconcileReport> {
    return reconcileDeadLetters(await this.moveContext());
  }

  async close(): Promise<void> {
    this.subscriptions.close();
    this.collections.transactions.close();
    await this.completedCounts
      .close()
      .catch((err: unknown) => this.options.logger.warn({ err }, 'writing completed-job counts failed at close; they are lost'));
    await this.series.close().catch((err: unknown) => this.options.logger.warn({ err }, 'writing queue series failed at close; they are lost'));
    if (this.ownsClient) await this.collections.client.close();
  }

  // ---- enqueue and claim -------------------------------------------------------------------

  async enqueue(jobs: NewJob[], opts: { now: Date; session?: unknown }): Promise<EnqueueResult[]> {
    const now = requireDate(opts?.now, 'now');
    const session = await this.sessionOf(opts.session, 'enqueue({ session })');
    if (Array.isArray(jobs) && hasDependencies(jobs)) {
      const { replicated } = await this.getDeployment();
      const enqueue = (plain: NewJob[], s: ClientSession) => this.enqueuePlain(plain, now, s);
      return enqueueWithDependencies({ collections: this.collections, replicated, enqueue, routes: this.jobRoutes() }, jobs, now, session);
    }
    return this.enqueuePlain(jobs, now, session);
  }

  /** Enqueues jobs without dependencies; on a partitioned deployment each goes to its partition. */
  private enqueuePlain(jobs: NewJob[], now: Date, session: ClientSession | undefined): Promise<EnqueueResult[]> {
    const { collections, values } = this;
    if (!this.routing) return enqueueJobs({ collections, values, dedupe: this.options.dedupe, session }, jobs, now);
    const place = (doc: JobDocument): void => this.placeJob(doc);
    return enqueueJobs({ collections, values, dedupe: this.options.dedupe, session, place, sharded: this.sharding.jobsSharded }, jobs, now);
  }

  /** Puts a new job in its partition and notes that its partition has work from its `runAt`. */
  private placeJob(doc: JobDocument): void {
    this.partitions.place(doc);
    this.partitionClaims.heard({ queue: doc.queue, partition: doc.partition ?? 0 }, doc.runAt.getTime());
  }

  /** The routes of jobs this store saw, on a partitioned deployment (undefined otherwise: nothing to keep). */
  private jobRoutes(): DependentRoutes | undefined {
    return this.routing ? { get: (id) => this.routes.get(id), learn: (id, route) => this.routes.learn(id, route) } : undefined;
  }

  /** See `JobStore.settleDependents`: O(dependents) writes by `_id`; without ids, the unsettled jobs come from a partial index. */
  async settleDependents(req: { now: Date; jobIds?: string[]; limit?: number }): Promise<number> {
    return settleDependents(this.collections, req, this.jobRoutes());
  }

  async claim(req: ClaimRequest): Promise<JobRecord[]> {
    const jobs =
      this.routing && Array.isArray(req?.queues) && req.now instanceof Date && typeof req.limit === 'number'
        ? await this.partitionClaims.claim(
            req,
            (route, one) => {
              const view = this.partitionView(route);
              return claimJobs(view.jobs, one, this.options.logger, view.flow, this.options.claimTimeoutMs, this.heldJobs);
            },
            (one) => claimablePartitions(this.collections.jobs, one, this.options.claimTimeoutMs),
          )
        : await claimJobs(this.collections.jobs, req, this.options.logger, this.flowClaims, this.options.claimTimeoutMs, this.heldJobs);
    // Offloaded payloads: one read of the bucket for the whole claim (the claim itself read none).
    // Should it fail, the jobs go back as a failed claim's do: their attempt not spent, their slots freed.
    try {
      await this.values.load(jobs);
    } catch (err) {
      const ours = { $or: jobs.map((job) => ({ _id: parseJobId(job.id)!, 'lease.token': job.lease!.token })) };
      const refusal = await giveBack(this.collections.jobs, ours, `${jobs.length} job(s)`, req.now, err);
      for (const job of jobs) await this.permits.release(job.lease!.token, job.id).catch(() => undefined); // else they end with the lease
      throw refusal;
    }
    for (const job of jobs) {
      if (job.lease) this.runQueues.set(job.lease.token, job.queue);
      this.series.add(job.queue, req.now, { started: 1, waitMs: Math.max(0, req.now.getTime() - job.runAt.getTime()) });
    }
    return jobs;
  }

  async holdFlow(req: FlowHoldRecord & { now: Date }): Promise<void> {
    requireDate(req?.now, 'holdFlow now');
    await this.permits.hold(req);
  }

  flowHolds(now: Date): Promise<FlowHoldRecord[]> {
    return this.permits.holds(now);
  }

  flowUsage(now: Date): Promise<FlowUsage[]> {
    return this.permits.usage(now);
  }

  // ---- fenced transitions ------------------------------------------------------------------
  // A run that ends or goes back to the queue frees the concurrency slots its claim took (flow
  // control); a heartbeat moves their end with the lease.

  async extendLease(lease: LeaseRef, until: Date, now: Date): Promise<LeaseExtension> {
    const extension = await this.ending(lease, () => this.fenced.extend(lease, extendLeaseUpdate(until, requireDate(now, 'now')), now));
    await this.permits.extend(lease.token, until, now, lease.jobId);
    return extension;
  }

  heartbeatMany(items: HeartbeatItem[], now: Date): Promise<HeartbeatOutcome[]> {
    return heartbeatMany(
      {
        jobs: this.collections.jobs,
        fenced: this.fenced,
        extendOne: (item, at) => this.extendLease(item.lease, item.until, at),
        extendSlots: (extended, at) =>
          this.permits.extendMany(
            extended.map(({ lease, until }) => ({ token: lease.token, jobId: lease.jobId, until })),
            at,
          ),
        forget: (token) => this.permits.forget(token),
      },
      items,
      now,
    );
  }

  async complete(lease: LeaseRef, outcome: { result?: unknown; now: Date; session?: unknown }): Promise<void> {
    await this.completeWithLogs(lease, outcome);
  }

  /** `complete`, with the run's last log lines in the same write (a `completeMany` item's `logs`). */
  private async completeWithLogs(
    lease: LeaseRef,
    outcome: { result?: unknown; now: Date; session?: unknown; logs?: CompletionItem['logs'] },
    known?: CompletionFacts,
  ): Promise<void> {
    const session = await this.sessionOf(outcome?.session, 'complete({ session })');
    requireDate(outcome.now, 'now');
    // A large result goes to the payload bucket first (in the session's transaction, if any). Should
    // the completion be refused, the file is left to the sweep: a lost reply may hide a completion
    // that did reference it.
    const value = await this.values.offloadResult(this.fenced.jobIdOf(lease), outcome.result, outcome.now, session);
    const update = completeUpdate(value.result, outcome.now, outcome.logs, value.ref);
    await this.ending(lease, () => completeKeepingHolds(this.collections.jobs, this.fenced, lease, update, session, this.batches, known));
    await this.countCompleted([lease], outcome.now);
    await this.permits.release(lease.token, lease.jobId, session, () => this.fenced.holds(lease));
  }

  /**
   * Counts completions (see {@link CompletedCounts}) under the queues their claims recorded; a run
   * this store did not claim (another instance's lease) has its queue read, one read for all.
   */
  private async countCompleted(leases: LeaseRef[], now: Date): Promise<void> {
    const unknown: ObjectId[] = [];
    for (const lease of leases) {
      const queue = this.runQueues.get(lease.token);
      this.runQueues.delete(lease.token);
      if (queue !== undefined) this.countedCompletion(queue, now);
      else unknown.push(this.fenced.jobIdOf(lease));
    }
    if (unknown.length === 0) return;
    const docs = await this.collections.jobs.find({ _id: { $in: unknown } }, { projection: { _id: 0, queue: 1 } }).toArray();
    for (const doc of docs) this.countedCompletion(doc.queue, now);
  }

  private countedCompletion(queue: string, now: Date): void {
    this.completedCounts.add(queue, now, 1);
    this.series.add(queue, now, { completed: 1 });
  }

  /** A failed attempt (a retry, or with `dead` a dead-lettering) in the series, under the queue its claim recorded (another instance's run: not counted). */
  private countFailed(lease: LeaseRef, now: Date, dead: boolean): void {
    const queue = typeof lease?.token === 'string' ? this.runQueues.get(lease.token) : undefined;
    if (queue !== undefined) this.series.add(queue, now, dead ? { failed: 1, dead: 1 } : { failed: 1 });
  }

  /** A run that ended otherwise than completed: no completion to count under its queue. */
  private runEnded(lease: LeaseRef): void {
    if (typeof lease?.token === 'string') this.runQueues.delete(lease.token);
  }

  async completeMany(items: CompletionItem[], now: Date): Promise<CompletionOutcome[]> {
    // Results over the offload threshold (or the limit) take `complete`, one by one; the rest the group commit.
    const large = Array.isArray(items) ? items.map((item) => this.largeResult(item)) : [];
    if (!large.some((l) => l !== false)) return this.completeSmall(items, now);
    const outcomes = new Array<CompletionOutcome>(items.length);
    const small = items.filter((_, i) => large[i] === false);
    const written = await this.completeSmall(small, now);
    small.forEach((item, j) => (outcomes[items.indexOf(item)] = written[j]!));
    await Promise.all(
      items.map(async (item, i) => {
        const refusal = large[i];
        if (refusal === false) return;
        if (refusal !== true) return void (outcomes[i] = { error: refusal });
        try {
          await this.completeWithLogs(item.lease, { now, result: item.result, ...(item.logs === undefined ? {} : { logs: item.logs }) });
          outcomes[i] = 'completed';
        } catch (err) {
          outcomes[i] = LoomError.is(err, 'LEASE_LOST')
            ? 'lost'
            : LoomError.is(err, 'CANCELLED')
              ? 'cancelled'
              : { error: err instanceof Error ? err : new Error(String(err)) };
        }
      }),
    );
    return outcomes;
  }

  /** Whether the item's result goes to the payload bucket (true), stays inline (false), or is refused (the error). */
  private largeResult(item: CompletionItem | undefined): boolean | Error {
    try {
      return this.values.isLarge(`The result of job ${String(item?.lease?.jobId)}`, item?.result);
    } catch (err) {
      return err as Error;
    }
  }

  private completeSmall(items: CompletionItem[], now: Date): Promise<CompletionOutcome[]> {
    return completeMany(
      {
        jobs: this.collections.jobs,
        fenced: this.fenced,
        completeOne: (item, at, known) =>
          this.completeWithLogs(
            item.lease,
            {
              now: at,
              ...(item.result === undefined ? {} : { result: item.result }),
              ...(item.logs === undefined ? {} : { logs: item.logs }),
            },
            known,
          ),
        batches: this.batches,
        settleSlots: async (completed, lost) => {
          for (const item of lost) this.permits.forget(item.lease.token);
          for (const item of lost) this.runEnded(item.lease);
          await this.countCompleted(
            completed.map((item) => item.lease),
            now,
          );
          await this.permits.releaseMany(completed.map((item) => ({ token: item.lease.token, jobId: item.lease.jobId })));
        },
      },
      items,
      now,
    );
  }

  async retry(lease: LeaseRef, outcome: { runAt: Date; error: ErrorRecord; now: Date }): Promise<void> {
    await this.ending(lease, () => this.fenced.write('retry', lease, retryUpdate(outcome.runAt, outcome.error, requireDate(outcome.now, 'now'))));
    this.countFailed(lease, outcome.now, false);
    this.runEnded(lease);
    this.heard(lease.jobId, outcome.runAt);
    await this.permits.release(lease.token, lease.jobId);
  }

  async release(lease: LeaseRef, now: Date): Promise<void> {
    requireDate(now, 'now');
    await this.ending(lease, () => this.fenced.write('release', lease, requeueUpdate(now, now)));
    this.runEnded(lease);
    this.heard(lease.jobId, now);
    await this.permits.release(lease.token, lease.jobId);
  }

  async deadLetter(lease: LeaseRef, outcome: { reason: string; error?: ErrorRecord; now: Date }): Promise<void> {
    requireDate(outcome?.now, 'now');
    requireString(outcome.reason, 'dead-letter reason');
    const context = await this.moveContext();
    await this.ending(lease, () => moveToDeadLetters(context, this.fenced.jobIdOf(lease), lease, outcome));
    this.countFailed(lease, outcome.now, true);
    this.runEnded(lease);
    await this.permits.release(lease.token, lease.jobId);
  }

  async sleep(lease: LeaseRef, req: { runAt: Date; step?: StepRecord; now: Date }): Promise<void> {
    const now = requireDate(req?.now, 'now');
    await this.ending(lease, () => this.fenced.transition('sleep', lease, requeueUpdate(req.runAt, now, 'sleep'), req.step));
    this.runEnded(lease);
    this.heard(lease.jobId, req.runAt);
    await this.permits.release(lease.token, lease.jobId);
  }

  async wait(lease: LeaseRef, req: { for: WaitCondition; timeoutAt?: Date; step?: StepRecord; now: Date }): Promise<'waiting' | 'signal-pending'> {
    const now = requireDate(req?.now, 'now');
    const signal = req.for?.signal === undefined ? undefined : requireString(req.for.signal, 'wait signal');
    const children = req.for.jobs === undefined ? [] : requireStrings(req.for.jobs, 'wait jobs');
    const outcome = await this.fenced.transition(
      'wait',
      lease,
      waitUpdate(req.for, req.timeoutAt, now),
      req.step,
      { absentSignal: signal },
      (job) => signal !== undefined && job.signals.some((s) => s.name === signal),
    );
    if (outcome === 'refused') return 'signal-pending';
    this.runEnded(lease);
    if (req.timeoutAt instanceof Date) this.heard(lease.jobId, req.timeoutAt);
    await this.permits.release(lease.token, lease.jobId);
    // Children that finished before the parent began waiting could not wake it: wake it now.
    if (children.length > 0 && !(await this.anyActive(children))) await this.wake(lease.jobId, now);
    return 'waiting';
  }

  recordStep(lease: LeaseRef, step: StepRecord, now: Date): Promise<StepRecord> {
    return this.fenced.recordStep(lease, step, now);
  }

  consumeSignal(lease: LeaseRef, req: { signal: string; stepName: string; now: Date }): Promise<StepRecord | null> {
    return this.fenced.consumeSignal(lease, req);
  }

  createWaitToken(lease: LeaseRef, token: WaitTokenRecord, now: Date): Promise<void> {
    return this.waitTokens.create(lease, token, now);
  }

  getWaitToken(id: string): Promise<WaitTokenRecord | null> {
    return this.waitTokens.get(id);
  }

  settleWaitToken(id: string, req: { settlement: WaitTokenSettlement; now: Date }): Promise<WaitTokenSettleOutcome | null> {
    return this.waitTokens.settle(id, req);
  }

  endWaitTokens(jobId: string, now: Date): Promise<number> {
    return this.waitTokens.end(jobId, now);
  }

  listWaitTokens(jobId: string): Promise<WaitTokenRecord[]> {
    return this.waitTokens.list(jobId);
  }

  /** The status of an ended job (null: gone), undefined while it has not ended: what ends its wait tokens. */
  private async endedJobStatus(jobId: string): Promise<JobStatus | null | undefined> {
    const _id = parseJobId(jobId);
    if (!_id) return null;
    const live = await this.collections.jobs.findOne({ _id }, { projection: { status: 1 } });
    if (live) return live.status === 'completed' || live.status === 'cancelled' ? live.status : undefined;
    const dead = await this.collections.deadLetters.findOne({ _id }, { projection: { _id: 1 } });
    return dead ? 'dead' : null;
  }

  recordPresence(presence: WorkerPresence): Promise<void> {
    return this.presence.record(presence);
  }

  removePresence(id: string): Promise<boolean> {
    return this.presence.remove(id);
  }

  listPresence(now: Date): Promise<WorkerPresence[]> {
    return this.presence.list(now);
  }

  async appendLogs(lease: LeaseRef, lines: JobLogLine[], now: Date, keep?: number): Promise<void> {
    await this.fenced.write('appendLogs', lease, appendLogsUpdate(lines, requireDate(now, 'now'), keep));
  }

  async progress(lease: LeaseRef, value: unknown, now: Date): Promise<void> {
    await this.fenced.write('progress', lease, progressUpdate(value, requireDate(now, 'now')));
  }

  // ---- unfenced transitions ----------------------------------------------------------------

  async wake(jobId: string, now: Date): Promise<boolean> {
    const id = parseJobId(jobId);
    if (!id) return false;
    const res = await this.collections.jobs.updateOne(waitingFilter(id), wakeUpdate(requireDate(now, 'now')));
    if (res.modifiedCount === 1) this.heard(jobId, now);
    return res.modifiedCount === 1;
  }

  async isWaitingFor(jobId: string, awaitedId: string): Promise<boolean> {
    const id = parseJobId(jobId);
    const awaited = requireString(awaitedId, 'awaited job id');
    if (!id) return false;
    return (await this.collections.jobs.countDocuments(waitingForJobFilter(id, awaited), { limit: 1 })) === 1;
  }

  /**
   * Covered by the parent index ({ parentId, status, _id }): no job document is fetched. On a
   * partitioned deployment the lookup goes to the routes of the children this store saw (a child
   * without a key lives in its queue's partition of its parent's id: one route per queue), one
   * shard each; a store that saw none of the parent's children asks every shard. A child in a
   * queue this store never saw may be missed there: the answer is then `null`, which makes the
   * engine's fan-in check the parent's awaited jobs itself (`wakeIfJobsFinished`), as it does for
   * the last child anyway.
   */
  async findActiveChild(parentId: string): Promise<string | null> {
    const filter = activeChildFilter(parentId);
    const routes = this.routing ? this.routes.childRoutes(parentId) : undefined;
    if (!routes) {
      const child = await this.collections.jobs.findOne(filter, { projection: { _id: 1 } });
      return child ? child._id.toHexString() : null;
    }
    for (const route of routes) {
      const child = await this.collections.jobs.findOne({ ...filter, ...routeFilter(route) }, { projection: { _id: 1 } });
      if (child) return child._id.toHexString();
    }
    return null;
  }

  async signal(jobId: string, req: { name: string; data: unknown; now: Date; id?: string }): Promise<boolean> {
    const stored = await storeSignal(this.collections.jobs, jobId, req);
    if (stored && req.now instanceof Date) this.heard(jobId, req.now);
    return stored;
  }

  // ---- reads -------------------------------------------------------------------------------

  async getJob(id: string, opts?: { values?: boolean }): Promise<JobRecord | null> {
    const _id = parseJobId(id);
    if (!_id) return null;
    const load = async (record: JobRecord): Promise<JobRecord> => (opts?.values === false ? record : (await this.values.load([record]))[0]!);
    const live = await this.collections.jobs.findOne({ _id });
    if (live) return load(toJobRecord(live));
    const dead = await this.collections.deadLetters.findOne({ _id });
    return dead ? load(toDeadJobRecord(dead)) : null;
  }

  /** Live jobs only: dead ones are in the dead-letter collection (`listDeadLetters`). */
  async listJobs(filter: JobFilter): Promise<JobRecord[]> {
    const limit = listLimit(filter?.limit);
    if (limit === 0) return [];
    const docs = await this.collections.jobs.find(jobListFilter(filter), { sort: { createdAt: -1, _id: -1 }, limit: limit ?? 0 }).toArray();
    return docs.map(toJobRecord);
  }

  /** Per-queue counts from index ranges of each queue (never a pass over the documents). */
  stats(): Promise<StoreStats> {
    return this.queues.stats();
  }

  // ---- operating jobs ----------------------------------------------------------------------

  listJobPage(query: JobPageQuery): Promise<JobSummary[]> {
    return this.control.listJobPage(query);
  }

  async cancelJob(id: string, req: { reason?: string; now: Date }): Promise<CancelOutcome | null> {
    this.partitionClaims.anything();
    const batchId = await this.activeMemberOf(id);
    const outcome =
      batchId === undefined
        ? await this.control.cancelJob(id, req)
        : await this.batches.within(undefined, async (session) => {
            const cancelled = await this.control.cancelJob(id, req, session);
            if (cancelled?.outcome === 'cancelled') await this.batches.moved(batchId, parseJobId(id)!, undefined, 'cancelled', req.now, session);
            return cancelled;
          });
    // A cancelled parent waits for nothing any more: its children's retention holds go (see retention-holds.ts).
    if (outcome?.outcome === 'cancelled') await releaseChildren(this.collections.jobs, parseJobId(id)!);
    return outcome;
  }

  async completeCancel(lease: LeaseRef, now: Date): Promise<void> {
    requireDate(now, 'now');
    const id = this.fenced.jobIdOf(lease);
    await releaseChildrenOfRun(this.collections.jobs, id, lease.token);
    const member = await this.collections.jobs.findOne(
      { ...fencedFilter('completeCancel', id, lease.token), batchId: { $exists: true } },
      { projection: { batchId: 1 } },
    );
    if (member?.batchId === undefined) await this.fenced.write('completeCancel', lease, completeCancelUpdate(now));
    else {
      const { batchId } = member;
      await this.batches.within(undefined, async (session) => {
        await this.fenced.write('completeCancel', lease, completeCancelUpdate(now), session);
        await this.batches.moved(batchId, id, 'running', 'cancelled', now, session);
      });
    }
    this.runEnded(lease);
    await this.permits.release(lease.token, lease.jobId);
  }

  async retryJob(id: string, now: Date): Promise<RetryOutcome | null> {
    const _id = parseJobId(id);
    requireDate(now, 'now');
    this.partitionClaims.anything();
    // A cancelled batch member queued again takes its end back from its batch, in one transaction
    // (a dead one does in its replay's transaction).
    const member = _id && (await this.collections.jobs.findOne({ _id, status: 'cancelled', batchId: { $exists: true } }, { projection: { batchId: 1 } }));
    if (!member?.batchId) return this.control.retryJob(id, now);
    const { batchId } = member;
    const retried = await this.batches.within(undefined, async (session) => {
      const updated = await this.collections.jobs.findOneAndUpdate({ _id: member._id, status: 'cancelled' }, retryCancelledUpdate(now), {
        projection: { _id: 1 },
        session,
      });
      if (updated) await this.batches.moved(batchId, member._id, 'cancelled', 'queued', now, session);
      return updated !== null;
    });
    return retried ? { outcome: 'retried', status: 'queued' } : this.control.retryJob(id, now);
  }

  runJobNow(id: string, now: Date): Promise<RunNowOutcome | null> {
    this.partitionClaims.anything();
    return this.control.runJobNow(id, now);
  }

  async removeJob(id: string, now: Date): Promise<RemoveOutcome | null> {
    const outcome = await this.control.removeJob(id, now, (queue, finishedAt) => this.completedCounts.add(queue, finishedAt, -1));
    // Its tokens go with it (a crash in between leaves settled tokens for the TTL index, pending ones
    // for endWaitTokens), and its offloaded payload and result (left to the sweep by a crash).
    if (outcome?.outcome === 'removed') {
      await this.waitTokens.remove(id);
      await this.values.deleteUnreferenced([parseJobId(id)!]);
    }
    return outcome;
  }

  replayDeadLetters(filter: DeadLetterFilter, req: { now: Date; onProgress?: (handled: number) => void }): Promise<DeadLetterReplayReport> {
    this.partitionClaims.anything();
    return this.control.replayDeadLetters(filter, req);
  }

  setQueuePaused(queue: string, paused: boolean, now: Date): Promise<void> {
    if (!paused) this.partitionClaims.anything();
    return this.queues.setPaused(queue, paused, now);
  }

  pausedQueues(): Promise<string[]> {
    return this.queues.paused();
  }

  async listQueues(now?: Date): Promise<QueueSummary[]> {
    const list = await this.queues.list(now);
    if (now instanceof Date) for (const q of list) this.series.sampleDepth(q.name, now, q.counts.queued);
    return list;
  }

  /** See `JobStore.queueSeries` and `queue-series.ts`: one index range of the series collection. */
  queueSeries(req: QueueSeriesQuery): Promise<QueueSeriesBucket[]> {
    return this.series.read(req);
  }

  countFinished(req: FinishedCountQuery): Promise<number | null> {
    return countFinished(this.collections, this.options, req);
  }

  nextClaimableAt(now: Date): Promise<Date | null> {
    return nextClaimableAt(this.collections.jobs, now);
  }

  // ---- dead letters ------------------------------------------------------------------------

  listDeadLetters(filter: DeadLetterFilter): Promise<DeadLetter[]> {
    return this.control.listDeadLetters(filter);
  }

  async replayDeadLetter(id: string, now: Date): Promise<string | null> {
    const _id = parseJobId(id);
    requireDate(now, 'now');
    if (!_id) return null;
    this.partitionClaims.anything();
    const replayed = await replayDeadLetter(await this.moveContext(), _id, now);
    if (replayed !== null) await releaseIfParentFinished(this.collections.jobs, _id);
    return replayed;
  }

  /** Deletes the letters, then the offloaded payloads and results no job references any more. */
  async purgeDeadLetters(filter: DeadLetterFilter): Promise<number> {
    const purged: ObjectId[] = [];
    const count = await this.control.purgeDeadLetters(filter, (ids) => purged.push(...ids));
    await this.values.deleteUnreferenced(purged);
    return count;
  }

  /**
   * The store's periodic housekeeping (`JobStore.maintain`, called by engines every 5 minutes):
   * deletes the offloaded payloads and results whose jobs are gone — removed by the retention TTL
   * index, which cannot delete files with them, or by a crash between a file's write and its job's
   * — once older than an hour. Resolves how many files it deleted.
   */
  async maintain(now: Date): Promise<void> {
    requireDate(now, 'now');
    const deleted = await this.values.sweep(now);
    if (deleted > 0) this.options.logger.debug({ deleted }, 'deleted offloaded payloads and results of jobs that are gone');
  }

  // ---- batches ---------------------------------------------------------------------------

  /** Needs a replica set: a member's end and its batch's counts are written in one transaction. */
  async createBatch(batch: NewBatch, opts: { now: Date }): Promise<CreatedBatch> {
    const now = requireDate(opts?.now, 'now');
    if (!(await this.getDeployment()).replicated) throw transactionsUnsupported('createBatch (batches)');
    return this.batches.create(batch, now);
  }

  getBatch(id: string): Promise<BatchRecord | null> {
    return this.batches.get(id);
  }

  batchFailures(id: string): Promise<string[]> {
    return this.batches.failures(id);
  }

  // ---- schedules ---------------------------------------------------------------------------

  ensureSchedule(name: string, now: Date): Promise<ScheduleRecord> {
    return this.schedules.ensure(name, now);
  }

  advanceSchedule(name: string, expected: Date | null, next: Date, now: Date, fire?: Date[]): Promise<boolean> {
    return this.schedules.advance(name, expected, next, now, fire);
  }

  markScheduleFired(name: string, firedUpTo: Date, now: Date): Promise<boolean> {
    return this.schedules.markFired(name, firedUpTo, now);
  }

  setSchedulePaused(name: string, paused: boolean, now: Date): Promise<boolean> {
    return this.schedules.setPaused(name, paused, now);
  }

  listSchedules(): Promise<ScheduleRecord[]> {
    return this.schedules.list();
  }

  describeSchedule(name: string, description: ScheduleDescription, now: Date): Promise<void> {
    return this.schedules.describe(name, description, now);
  }

  /** Network trouble, failovers, write conflicts and time limits are transient; other server refusals are final. */
  isTransientError(error: unknown): boolean {
    return isTransientMongoError(error);
  }

  // ---- transactions and wake-ups -----------------------------------------------------------

  /**
   * Runs `fn` in a MongoDB transaction (retried by the driver on transient errors, so `fn` must be
   * safe to run more than once). Pass `session` to your own writes and to `loom.enqueue(..., {
   * session })`. Needs a replica set: on a standalone it rejects with TRANSACTIONS_UNSUPPORTED.
   * Whatever the client's defaults, it runs on the primary with read concern `snapshot` and commits
   * with the store's `writeConcern`, so a job completion it carries is as durable as any other.
   */
  async withTransaction<T>(fn: (session: unknown) => Promise<T>): Promise<T> {
    if (!(await this.getDeployment()).replicated) throw transactionsUnsupported('store.withTransaction');
    return inTransaction(this.collections, fn);
  }

  /**
   * Calls `listener` when any process enqueues a job (a change stream on inserts). Where change
   * streams are unavailable (standalone) it does nothing and the engine's polling carries on.
   */
  subscribe(listener: InsertListener): () => void {
    return this.subscriptions.subscribe((event) => {
      // Heard before the engine claims for it: the partition it landed in is claimed first.
      this.partitionClaims.heard({ queue: event.queue, partition: event.partition ?? 0 }, event.runAt.getTime());
      const { partition: _partition, ...announced } = event;
      listener(announced);
    });
  }

  /** The primary's current time (`hello.localTime`), for the engine's clock-skew check. */
  serverTime(): Promise<Date> {
    return readServerTime(this.collections.client);
  }

  // ---- helpers -----------------------------------------------------------------------------

  /** Job `jobId` may be claimable from `at`: its partition is claimed again (see partition-claims.ts). */
  private heard(jobId: string, at: Date): void {
    const route = this.routing ? this.routes.get(jobId) : undefined;
    if (route) this.partitionClaims.heard(route, at.getTime());
    else if (this.routing) this.partitionClaims.anything();
  }

  private partitionView(route: Route): { jobs: Collection<JobDocument>; flow: MongoFlowClaims } {
    const name = `${route.partition}\u0000${route.queue}`;
    let view = this.partitionViews.get(name);
    if (!view) {
      const jobs = partitionJobs(this.collections.jobs, this.routes, route);
      view = { jobs, flow: new MongoFlowClaims(jobs, this.permits, this.options.logger, this.options.claimTimeoutMs) };
      this.partitionViews.set(name, view);
    }
    return view;
  }

  private getDeployment(): Promise<Deployment> {
    this.deployment ??= detectDeployment(this.collections.client.db(this.options.database)).catch((err: unknown) => {
      this.deployment = undefined;
      throw err;
    });
    return this.deployment;
  }

  private async moveContext(): Promise<MoveContext> {
    const { replicated } = await this.getDeployment();
    return { collections: this.collections, transactional: replicated, logger: this.options.logger, batches: this.batches };
  }

  /** The batch of an active batch member with this id (none for other jobs, or an id that is not ours). */
  private async activeMemberOf(id: string): Promise<string | undefined> {
    const _id = parseJobId(id);
    if (!_id) return undefined;
    const doc = await this.collections.jobs.findOne(
      { _id, batchId: { $exists: true }, status: { $in: ['queued', 'running', 'waiting'] } },
      { projection: { batchId: 1 } },
    );
    return doc?.batchId;
  }

  private async sessionOf(session: unknown, feature: string): Promise<ClientSession | undefined> {
    if (session === undefined || session === null) return undefined;
    if (!(await this.getDeployment()).replicated) throw transactionsUnsupported(feature);
    // `client` is internal in the driver's typings but present at runtime; a session of another
    // client could not carry Loom's writes into the caller's transaction.
    const candidate = session as Partial<ClientSession> & { client?: unknown };
    if (typeof candidate.inTransaction !== 'function' || candidate.client !== this.collections.client) {
      throw new StoreArgumentError(`${feature}: session must come from store.withTransaction (or a session of store.client)`);
    }
    return session as ClientSession;
  }

  /** A fenced write of a run; a lost lease also drops the run's flow slots from this store's memory (they ended with the lease). */
  private async ending<T>(lease: LeaseRef, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (err) {
      if (LoomError.is(err, 'LEASE_LOST') && typeof lease?.token === 'string') {
        this.permits.forget(lease.token);
        this.runEnded(lease);
      }
      throw err;
    }
  }

  private async anyActive(ids: string[]): Promise<boolean> {
    const objectIds = ids.map((id) => parseJobId(id)).filter((id): id is ObjectId => id !== null);
    if (objectIds.length === 0) return false;
    return (await this.collections.jobs.countDocuments({ _id: { $in: objectIds }, status: { $in: ['queued', 'running', 'waiting'] } }, { limit: 1 })) > 0;
  }
}
