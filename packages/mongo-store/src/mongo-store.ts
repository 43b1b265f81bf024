import { randomUUID } from 'node:crypto';
import { MongoClient, type ClientSession, type Document, type ObjectId, type UpdateFilter } from 'mongodb';
import {
  LeaseLostError,
  LoomError,
  type ClaimRequest,
  type DeadLetter,
  type DeadLetterFilter,
  type EnqueueResult,
  type ErrorRecord,
  type JobFilter,
  type JobRecord,
  type JobStore,
  type LeaseRef,
  type NewJob,
  type ScheduleRecord,
  type StepRecord,
  type StoreStats,
  type WaitCondition,
} from '@loom/core';
import { parseJobId, requireDate, requireNumber, requireString, requireStrings } from './arguments.js';
import { openCollections, withSession, type StoreCollections } from './collections.js';
import { moveToDeadLetters, reconcileDeadLetters, replayDeadLetter, type MoveContext, type ReconcileReport } from './dead-letters.js';
import { detectDeployment, type Deployment } from './deployment.js';
import type { JobDocument } from './documents.js';
import { enqueueJobs } from './enqueue.js';
import {
  claimCandidateFilter,
  CLAIM_SORT,
  claimFilter,
  deadLetterFilter,
  fencedFilter,
  jobListFilter,
  unfinishedNotWaitingForFilter,
  waitingFilter,
  waitingForSignalFilter,
  type FenceConditions,
} from './filters.js';
import { CLAIM_INDEX_KEY, ensureIndexes, indexPlan, RETENTION_INDEX } from './indexes.js';
import { watchInserts, type InsertListener } from './insert-watcher.js';
import { resolveOptions, type MongoStoreOptions, type ResolvedOptions } from './options.js';
import { toDeadJobRecord, toDeadLetter, toJobRecord } from './records.js';
import { ScheduleRepository } from './schedules.js';
import { transactionsUnsupported } from './store-errors.js';
import {
  claimUpdate,
  completeUpdate,
  consumeSignalUpdate,
  extendLeaseUpdate,
  progressUpdate,
  pendingStepArrayFilters,
  requeueUpdate,
  retryUpdate,
  signalUpdate,
  touchUpdate,
  waitUpdate,
  wakeUpdate,
  withStep,
} from './updates.js';

function completedStep(job: JobDocument, name: string): StepRecord | undefined {
  return job.steps.find((s) => s.name === name && s.status === 'completed');
}

/** A conditional write that lost a race is retried this often before giving up loudly. */
const MAX_CONDITIONAL_ROUNDS = 5;
/** A safety bound only: a batch claim round fails only when a concurrent claimer progressed. */
const MAX_BATCH_ROUNDS = 100;

/** Claim order (priority desc, runAt, enqueue order) for jobs read back in arbitrary order. */
function sortForClaim(docs: JobDocument[]): JobDocument[] {
  return docs.sort(
    (a, b) => b.priority - a.priority || a.runAt.getTime() - b.runAt.getTime() || a._id.toHexString().localeCompare(b._id.toHexString()),
  );
}

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
  private deployment?: Promise<Deployment>;
  private initializing?: Promise<void>;
  private readonly watchers = new Set<() => void>();
  private closed = false;

  constructor(options: MongoStoreOptions) {
    this.options = resolveOptions(options);
    this.pollIntervalMs = this.options.pollIntervalMs;
    this.ownsClient = options.client === undefined;
    const client = options.client ?? new MongoClient(options.url!, options.clientOptions);
    this.collections = openCollections(client, this.options);
    this.schedules = new ScheduleRepository(this.collections.schedules);
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
    if (this.ownsClient) await this.collections.client.connect();
    await this.getDeployment();
    const plan = indexPlan(this.options);
    await ensureIndexes(this.collections.jobs, plan.jobs, RETENTION_INDEX.jobs);
    await ensureIndexes(this.collections.deadLetters, plan.deadLetters, RETENTION_INDEX.deadLetters);
    await this.reconcile();
  }

  /** Resolves jobs left in both the jobs and dead-letter collections by an interrupted move. */
  async reconcile(): Promise<ReconcileReport> {
    return reconcileDeadLetters(await this.moveContext());
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const stop of this.watchers) stop();
    this.watchers.clear();
    if (this.ownsClient) await this.collections.client.close();
  }

  // ---- enqueue and claim -------------------------------------------------------------------

  async enqueue(jobs: NewJob[], opts: { now: Date; session?: unknown }): Promise<EnqueueResult[]> {
    const now = requireDate(opts?.now, 'now');
    const session = await this.sessionOf(opts.session, 'enqueue({ session })');
    return enqueueJobs({ collections: this.collections, dedupe: this.options.dedupe, session }, jobs, now);
  }

  async claim(req: ClaimRequest): Promise<JobRecord[]> {
    const limit = requireNumber(req?.limit, 'claim limit', true);
    if (limit < 1) throw new LoomError('INVALID_ARGUMENT', `claim limit must be >= 1, got ${limit}`);
    const lease = { owner: requireString(req.owner, 'claim owner'), token: randomUUID(), until: requireDate(req.leaseUntil, 'claim leaseUntil') };
    const now = requireDate(req.now, 'claim now');
    const filter = claimFilter(req);
    if (filter.queue && (filter.queue as { $in: string[] }).$in.length === 0) return [];
    if (limit === 1) {
      const doc = await this.collections.jobs.findOneAndUpdate(filter, claimUpdate(lease, now), { sort: CLAIM_SORT, hint: CLAIM_INDEX_KEY, returnDocument: 'after' });
      return doc ? [toJobRecord(doc)] : [];
    }
    return this.claimBatch(req, lease, now, limit);
  }

  /**
   * Three commands per round for up to `limit` jobs: read candidate ids in claim order; take them
   * with one unordered bulk `update` whose statements each re-check the claim filter for one
   * document (so concurrent claimers never share a job) and give it its own fresh token; read back
   * the ones this round won. Candidates lost to a concurrent claimer are replaced in the next round
   * until `limit` is reached or nothing claimable is left; a lost round means another claimer made
   * progress, so the loop ends. A lone candidate is taken and read back by one `findAndModify`, and
   * a read that found fewer candidates than wanted ends the loop (it saw every job claimable then),
   * so a claim that finds one due job costs two commands, not four.
   */
  private async claimBatch(req: ClaimRequest, lease: { owner: string; until: Date }, now: Date, limit: number): Promise<JobRecord[]> {
    const { jobs } = this.collections;
    const claimed: JobDocument[] = [];
    for (let round = 0; claimed.length < limit && round < MAX_BATCH_ROUNDS; round++) {
      const wanted = limit - claimed.length;
      const candidates = await jobs.find(claimFilter(req), { sort: CLAIM_SORT, hint: CLAIM_INDEX_KEY, limit: wanted, projection: { _id: 1 } }).toArray();
      if (candidates.length === 0) break;
      if (candidates.length === 1) {
        const doc = await jobs.findOneAndUpdate(claimCandidateFilter(req, candidates[0]._id), claimUpdate({ ...lease, token: randomUUID() }, now), { returnDocument: 'after' });
        if (doc) claimed.push(doc);
      } else {
        const leases = candidates.map(({ _id }) => ({ _id, lease: { ...lease, token: randomUUID() } }));
        const taken = await jobs.bulkWrite(
          leases.map(({ _id, lease: own }) => ({ updateOne: { filter: claimCandidateFilter(req, _id), update: claimUpdate(own, now) } })),
          { ordered: false },
        );
        if (taken.modifiedCount > 0) {
          const won = { _id: { $in: leases.map((l) => l._id) }, 'lease.token': { $in: leases.map((l) => l.lease.token) } };
          claimed.push(...(await jobs.find(won).toArray()));
        }
      }
      if (candidates.length < wanted) break;
    }
    return sortForClaim(claimed).map(toJobRecord);
  }

  // ---- fenced transitions ------------------------------------------------------------------

  async extendLease(lease: LeaseRef, until: Date, now: Date): Promise<void> {
    await this.fencedUpdate(lease, extendLeaseUpdate(until, requireDate(now, 'now')));
  }

  async complete(lease: LeaseRef, outcome: { result?: unknown; now: Date; session?: unknown }): Promise<void> {
    const session = await this.sessionOf(outcome?.session, 'complete({ session })');
    await this.fencedUpdate(lease, completeUpdate(outcome.result, requireDate(outcome.now, 'now')), {}, session);
  }

  async retry(lease: LeaseRef, outcome: { runAt: Date; error: ErrorRecord; now: Date }): Promise<void> {
    await this.fencedUpdate(lease, retryUpdate(outcome.runAt, outcome.error, requireDate(outcome.now, 'now')));
  }

  async release(lease: LeaseRef, now: Date): Promise<void> {
    requireDate(now, 'now');
    await this.fencedUpdate(lease, requeueUpdate(now, now));
  }

  async deadLetter(lease: LeaseRef, outcome: { reason: string; error?: ErrorRecord; now: Date }): Promise<void> {
    requireDate(outcome?.now, 'now');
    requireString(outcome.reason, 'dead-letter reason');
    await moveToDeadLetters(await this.moveContext(), this.leaseJobId(lease), lease, outcome);
  }

  async sleep(lease: LeaseRef, req: { runAt: Date; step?: StepRecord; now: Date }): Promise<void> {
    const now = requireDate(req?.now, 'now');
    await this.fencedTransition(lease, 'sleep', requeueUpdate(req.runAt, now), req.step);
  }

  async wait(lease: LeaseRef, req: { for: WaitCondition; timeoutAt?: Date; step?: StepRecord; now: Date }): Promise<'waiting' | 'signal-pending'> {
    const now = requireDate(req?.now, 'now');
    const signal = req.for?.signal === undefined ? undefined : requireString(req.for.signal, 'wait signal');
    const children = req.for.jobs === undefined ? [] : requireStrings(req.for.jobs, 'wait jobs');
    const outcome = await this.fencedTransition(lease, 'wait', waitUpdate(req.for, req.timeoutAt, now), req.step, { absentSignal: signal }, (job) =>
      signal !== undefined && job.signals.some((s) => s.name === signal),
    );
    if (outcome === 'refused') return 'signal-pending';
    // Children that finished before the parent began waiting could not wake it: wake it now.
    if (children.length > 0 && !(await this.anyActive(children))) await this.wake(lease.jobId, now);
    return 'waiting';
  }

  async recordStep(lease: LeaseRef, step: StepRecord, now: Date): Promise<StepRecord> {
    requireString(step?.name, 'step name');
    const update = touchUpdate(requireDate(now, 'now'));
    for (let round = 0; round < MAX_CONDITIONAL_ROUNDS; round++) {
      if (await this.fencedWithStep(lease, update, step)) return step;
      const existing = completedStep(await this.ownedJob(lease), step.name);
      if (existing) return existing;
    }
    throw this.tooManyRounds('recordStep', lease);
  }

  async consumeSignal(lease: LeaseRef, req: { signal: string; stepName: string; now: Date }): Promise<StepRecord | null> {
    const now = requireDate(req?.now, 'now');
    const name = requireString(req.signal, 'signal name');
    const stepName = requireString(req.stepName, 'step name');
    for (let round = 0; round < MAX_CONDITIONAL_ROUNDS; round++) {
      const job = await this.ownedJob(lease);
      const recorded = completedStep(job, stepName);
      if (recorded) return recorded; // consumed by an earlier attempt: replay it, consume nothing
      const stored = job.signals.find((s) => s.name === name);
      if (!stored) return null;
      const step: StepRecord = { name: stepName, kind: 'signal', status: 'completed', result: stored.data, at: now };
      if (await this.fencedWithStep(lease, consumeSignalUpdate(stored.sid, now), step, { signalId: stored.sid })) return step;
    }
    throw this.tooManyRounds('consumeSignal', lease);
  }

  async progress(lease: LeaseRef, value: unknown, now: Date): Promise<void> {
    await this.fencedUpdate(lease, progressUpdate(value, requireDate(now, 'now')));
  }

  // ---- unfenced transitions ----------------------------------------------------------------

  async wake(jobId: string, now: Date): Promise<boolean> {
    const id = parseJobId(jobId);
    if (!id) return false;
    const res = await this.collections.jobs.updateOne(waitingFilter(id), wakeUpdate(requireDate(now, 'now')));
    return res.modifiedCount === 1;
  }

  async signal(jobId: string, req: { name: string; data: unknown; now: Date }): Promise<boolean> {
    const id = parseJobId(jobId);
    const now = requireDate(req?.now, 'now');
    const name = requireString(req.name, 'signal name');
    if (!id) return false;
    const { jobs } = this.collections;
    for (let round = 0; round < MAX_CONDITIONAL_ROUNDS; round++) {
      if ((await jobs.updateOne(waitingForSignalFilter(id, name), signalUpdate(req, now, true))).matchedCount === 1) return true;
      if ((await jobs.updateOne(unfinishedNotWaitingForFilter(id, name), signalUpdate(req, now, false))).matchedCount === 1) return true;
      // Neither matched: the job is gone or finished, or it began waiting for this signal between
      // the two writes (then the next round wakes it).
      if (!(await jobs.findOne({ _id: id, status: { $in: ['queued', 'running', 'waiting'] } }, { projection: { _id: 1 } }))) return false;
    }
    throw new LoomError('STORE_ERROR', `signal "${name}" to job ${jobId}: the job kept changing state; retry`);
  }

  // ---- reads -------------------------------------------------------------------------------

  async getJob(id: string): Promise<JobRecord | null> {
    const _id = parseJobId(id);
    if (!_id) return null;
    const live = await this.collections.jobs.findOne({ _id });
    if (live) return toJobRecord(live);
    const dead = await this.collections.deadLetters.findOne({ _id });
    return dead ? toDeadJobRecord(dead) : null;
  }

  /** Live jobs only: dead ones are in the dead-letter collection (`listDeadLetters`). */
  async listJobs(filter: JobFilter): Promise<JobRecord[]> {
    const limit = this.limitOf(filter?.limit);
    if (limit === 0) return [];
    const docs = await this.collections.jobs.find(jobListFilter(filter), { sort: { createdAt: -1, _id: -1 }, limit: limit ?? 0 }).toArray();
    return docs.map(toJobRecord);
  }

  async stats(): Promise<StoreStats> {
    const queues: StoreStats['queues'] = {};
    const groups = await this.collections.jobs
      .aggregate<{ _id: { queue: string; status: JobRecord['status'] }; n: number }>([
        { $group: { _id: { queue: '$queue', status: '$status' }, n: { $sum: 1 } } },
      ])
      .toArray();
    for (const { _id, n } of groups) (queues[_id.queue] ??= {})[_id.status] = n;
    const deadLetters = await this.collections.deadLetters.countDocuments({});
    return { queues, deadLetters };
  }

  // ---- dead letters ------------------------------------------------------------------------

  async listDeadLetters(filter: DeadLetterFilter): Promise<DeadLetter[]> {
    const limit = this.limitOf(filter?.limit);
    if (limit === 0) return [];
    const docs = await this.collections.deadLetters
      .find(deadLetterFilter(filter ?? {}), { sort: { diedAt: -1, _id: -1 }, limit: limit ?? 0 })
      .toArray();
    return docs.map(toDeadLetter);
  }

  async replayDeadLetter(id: string, now: Date): Promise<string | null> {
    const _id = parseJobId(id);
    requireDate(now, 'now');
    return _id ? replayDeadLetter(await this.moveContext(), _id, now) : null;
  }

  async purgeDeadLetters(filter: DeadLetterFilter): Promise<number> {
    const { deadLetters } = this.collections;
    const where = deadLetterFilter(filter ?? {});
    const limit = this.limitOf(filter?.limit);
    if (limit === undefined) return (await deadLetters.deleteMany(where)).deletedCount;
    if (limit === 0) return 0;
    const ids = await deadLetters.find(where, { sort: { diedAt: -1, _id: -1 }, limit, projection: { _id: 1 } }).toArray();
    return (await deadLetters.deleteMany({ _id: { $in: ids.map((d) => d._id) } })).deletedCount;
  }

  // ---- schedules ---------------------------------------------------------------------------

  ensureSchedule(name: string, now: Date): Promise<ScheduleRecord> {
    return this.schedules.ensure(name, now);
  }

  advanceSchedule(name: string, expected: Date | null, next: Date, now: Date): Promise<boolean> {
    return this.schedules.advance(name, expected, next, now);
  }

  setSchedulePaused(name: string, paused: boolean, now: Date): Promise<boolean> {
    return this.schedules.setPaused(name, paused, now);
  }

  listSchedules(): Promise<ScheduleRecord[]> {
    return this.schedules.list();
  }

  // ---- transactions and wake-ups -----------------------------------------------------------

  /**
   * Runs `fn` in a MongoDB transaction (retried by the driver on transient errors, so `fn` must be
   * safe to run more than once). Pass `session` to your own writes and to `loom.enqueue(..., {
   * session })`. Needs a replica set: on a standalone it rejects with TRANSACTIONS_UNSUPPORTED.
   */
  async withTransaction<T>(fn: (session: unknown) => Promise<T>): Promise<T> {
    if (!(await this.getDeployment()).replicated) throw transactionsUnsupported('store.withTransaction');
    return this.collections.client.withSession((session) => session.withTransaction(() => fn(session)));
  }

  /**
   * Calls `listener` when any process enqueues a job (a change stream on inserts). Where change
   * streams are unavailable (standalone) it does nothing and the engine's polling carries on.
   */
  subscribe(listener: InsertListener): () => void {
    let stop: (() => void) | undefined;
    let unsubscribed = false;
    const unsubscribe = () => {
      unsubscribed = true;
      stop?.();
      this.watchers.delete(unsubscribe);
    };
    this.watchers.add(unsubscribe);
    this.getDeployment().then(
      (deployment) => {
        if (unsubscribed || this.closed) return;
        if (!deployment.replicated) {
          this.options.logger.debug({}, 'change streams need a replica set; workers rely on polling');
          return;
        }
        stop = watchInserts(this.collections.jobs, listener, this.options.logger);
      },
      (err: unknown) => this.options.logger.warn({ err }, 'could not reach MongoDB to open the job change stream; workers rely on polling'),
    );
    return unsubscribe;
  }

  // ---- helpers -----------------------------------------------------------------------------

  private getDeployment(): Promise<Deployment> {
    this.deployment ??= detectDeployment(this.collections.client.db(this.options.database)).catch((err: unknown) => {
      this.deployment = undefined;
      throw err;
    });
    return this.deployment;
  }

  private async moveContext(): Promise<MoveContext> {
    const { replicated } = await this.getDeployment();
    return { collections: this.collections, transactional: replicated, logger: this.options.logger };
  }

  private async sessionOf(session: unknown, feature: string): Promise<ClientSession | undefined> {
    if (session === undefined || session === null) return undefined;
    if (!(await this.getDeployment()).replicated) throw transactionsUnsupported(feature);
    // `client` is internal in the driver's typings but present at runtime; a session of another
    // client could not carry Loom's writes into the caller's transaction.
    const candidate = session as Partial<ClientSession> & { client?: unknown };
    if (typeof candidate.inTransaction !== 'function' || candidate.client !== this.collections.client) {
      throw new LoomError('INVALID_ARGUMENT', `${feature}: session must come from store.withTransaction (or a session of store.client)`);
    }
    return session as ClientSession;
  }

  private leaseJobId(lease: LeaseRef): ObjectId {
    if (typeof lease !== 'object' || lease === null) throw new LoomError('INVALID_ARGUMENT', 'lease must be { jobId, token }');
    requireString(lease.token, 'lease token');
    const id = parseJobId(lease.jobId, 'lease jobId');
    if (!id) throw new LeaseLostError(String(lease.jobId), 'no job has this id');
    return id;
  }

  /** A fenced write; false when the fence (or a condition) did not match. */
  private async fencedTry(
    lease: LeaseRef,
    update: UpdateFilter<JobDocument>,
    conditions: FenceConditions = {},
    session?: ClientSession,
    arrayFilters?: Document[],
  ): Promise<boolean> {
    const id = this.leaseJobId(lease);
    const options = { ...withSession(session), ...(arrayFilters ? { arrayFilters } : {}) };
    const res = await this.collections.jobs.updateOne(fencedFilter(id, lease.token, conditions), update, options);
    return res.matchedCount === 1;
  }

  /** A fenced write that must apply: zero matches is a lost lease, and nothing changed. */
  private async fencedUpdate(lease: LeaseRef, update: UpdateFilter<JobDocument>, conditions: FenceConditions = {}, session?: ClientSession): Promise<void> {
    if (!(await this.fencedTry(lease, update, conditions, session))) throw new LeaseLostError(lease.jobId);
  }

  /** The job, if this lease still holds it; LeaseLostError otherwise. */
  private async ownedJob(lease: LeaseRef): Promise<JobDocument> {
    const job = await this.collections.jobs.findOne(fencedFilter(this.leaseJobId(lease), lease.token));
    if (!job) throw new LeaseLostError(lease.jobId);
    return job;
  }

  private tooManyRounds(operation: string, lease: LeaseRef): LoomError {
    return new LoomError('STORE_ERROR', `${operation} on job ${lease.jobId}: the job kept changing under this worker; retry`);
  }

  /** A list limit: undefined = all; zero or less = none (as MemoryStore). */
  private limitOf(limit: unknown): number | undefined {
    if (limit === undefined) return undefined;
    return Math.max(0, requireNumber(limit, 'filter.limit', true));
  }

  private async anyActive(ids: string[]): Promise<boolean> {
    const objectIds = ids.map((id) => parseJobId(id)).filter((id): id is ObjectId => id !== null);
    if (objectIds.length === 0) return false;
    return (await this.collections.jobs.countDocuments({ _id: { $in: objectIds }, status: { $in: ['queued', 'running', 'waiting'] } }, { limit: 1 })) > 0;
  }

  /** Writes `update` plus `step` (appended, or replacing a pending one); false when nothing matched. */
  private async fencedWithStep(lease: LeaseRef, update: UpdateFilter<JobDocument>, step: StepRecord, conditions: FenceConditions = {}): Promise<boolean> {
    if (await this.fencedTry(lease, withStep(update, step, 'append'), { ...conditions, absentStep: step.name })) return true;
    return this.fencedTry(lease, withStep(update, step, 'replace-pending'), { ...conditions, pendingStep: step.name }, undefined, pendingStepArrayFilters(step.name));
  }

  /**
   * A fenced transition that may carry a step (first completed write wins). Returns 'refused' when
   * `refuse(job)` explains why the conditions failed (e.g. the awaited signal is already there).
   */
  private async fencedTransition(
    lease: LeaseRef,
    operation: string,
    update: UpdateFilter<JobDocument>,
    step: StepRecord | undefined,
    conditions: FenceConditions = {},
    refuse: (job: JobDocument) => boolean = () => false,
  ): Promise<'done' | 'refused'> {
    let pendingStep = step;
    for (let round = 0; round < MAX_CONDITIONAL_ROUNDS; round++) {
      const written = pendingStep ? await this.fencedWithStep(lease, update, pendingStep, conditions) : await this.fencedTry(lease, update, conditions);
      if (written) return 'done';
      const job = await this.ownedJob(lease);
      if (refuse(job)) return 'refused';
      // The step was completed by an earlier attempt: keep it, make the transition alone.
      if (pendingStep && completedStep(job, pendingStep.name)) pendingStep = undefined;
    }
    throw this.tooManyRounds(operation, lease);
  }

}
