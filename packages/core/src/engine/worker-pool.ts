import type { Clock } from '../support/clock.js';
import type { StoreOutage } from './store-outage.js';
import type { EventBus } from './events.js';
import type { JobRecord } from '../store/job-record.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import type { JobDefinition } from '../jobs/job-definition.js';
import type { JobRunner } from './job-runner.js';
import type { RunEnds } from './run-ends.js';
import { claimLeases, releaseUnstarted } from './lease.js';
import { ClaimDemand, type EnqueuedJob } from './claim-demand.js';
import { ShutdownSignal } from '../support/lazy-abort.js';
import type { Logger } from '../support/logger.js';
import type { ClaimRequest, JobStore } from '../store/store.js';
import type { FlowHold } from '../store/flow.js';
import type { FlowControl } from './flow-control.js';
import { toError } from '../support/to-error.js';
import { onceAfterThisTurn } from '../support/after-this-turn.js';
import { withDeadline } from '../support/store-deadline.js';

/** A run this pool has in flight. */
export interface InFlightRun {
  jobId: string;
  name: string;
  attempt: number;
}

/** One run in flight: a class, not a literal (it points to the whole run; see support/plain-constructor.ts). */
class Slot implements InFlightRun {
  /** The run's two ends (outcome stored; handler returned too) and its cancel; set once the run is started. */
  ends!: RunEnds;
  /** Its neighbours in {@link SlotList} (undefined at the ends, and once removed). */
  prev: Slot | undefined = undefined;
  next: Slot | undefined = undefined;

  constructor(
    readonly jobId: string,
    readonly name: string,
    readonly attempt: number,
    /** A batch handler's run: its call, not the run, takes a unit of the engine's concurrency. */
    readonly batched: boolean,
  ) {}
}

/**
 * The runs in flight, oldest first: a doubly linked list through the slots themselves. Not a
 * `Set`: with a slot added and deleted per run, a Set kept finished slots (and through them whole
 * runs: lease, context, copied record) reachable long enough to be promoted to the old
 * generation, about 2.4 KB per no-op job that only a mark-compact freed, a third of a MemoryStore
 * run's CPU (bench/README.md, "Issue 33 items 2/3"). The same cause as `ShutdownSignal`'s list.
 */
class SlotList {
  private head: Slot | undefined;
  private tail: Slot | undefined;
  size = 0;

  add(slot: Slot): void {
    slot.prev = this.tail;
    slot.next = undefined;
    if (this.tail) this.tail.next = slot;
    else this.head = slot;
    this.tail = slot;
    this.size++;
  }

  /** Unlinks `slot`, which must be in the list; its links are cleared so it references no other run. */
  delete(slot: Slot): void {
    if (slot.prev) slot.prev.next = slot.next;
    else this.head = slot.next;
    if (slot.next) slot.next.prev = slot.prev;
    else this.tail = slot.prev;
    slot.prev = slot.next = undefined;
    this.size--;
  }

  /** A copy, oldest first: callers may remove slots while they go through it. */
  toArray(): Slot[] {
    const all: Slot[] = [];
    for (let slot = this.head; slot; slot = slot.next) all.push(slot);
    return all;
  }
}

export interface WorkerPoolOptions {
  store: JobStore;
  clock: Clock;
  logger: Logger;
  events: EventBus;
  registry: JobRegistry;
  runner: JobRunner;
  /** `lease.owner` of this engine's claims. */
  owner: string;
  concurrency: number;
  queues: readonly string[];
  leaseMs: number;
  pollMs: number;
  /** False while claiming must pause (e.g. this engine's clock is too far from the store's). */
  canClaim?: () => boolean;
  /** Flow limits for the claims, and the names held back for now. */
  flow?: FlowControl;
  /** The engine's one view of a store outage (see store-outage.ts). */
  outage?: StoreOutage;
}

const MAX_ERROR_BACKOFF_MS = 60_000;

/** Claims of one batch handler's name per pump, at most (the next pump goes on). */
const MAX_BATCH_CLAIMS_PER_PUMP = 16;

/**
 * Claims jobs and hands them to the runner, within the engine's concurrency and each job's own.
 * It claims ("pumps") when started, after an enqueue from this process, when the store announces
 * jobs from elsewhere, when a run ends while more may be waiting, and every `pollMs`; a
 * {@link ClaimDemand} decides whether each of these is worth a claim and of how many. A failing
 * claim is logged and retried with growing delay; the loop never stops by itself.
 */
export class WorkerPool {
  private state: 'idle' | 'running' | 'stopping' | 'stopped' = 'idle';
  /** The slot objects, not a map keyed by `id:token`: building and hashing that string was a few % of a short job. */
  private readonly slots = new SlotList();
  private readonly runningByName = new Map<string, number>();
  /** Runs of batch handlers in {@link slots}. */
  private batchedRuns = 0;
  private pumping: Promise<void> | null = null;
  private readonly demand = new ClaimDemand();
  private pumpAgain = false;
  private cancelPoll: (() => void) | undefined;
  private unsubscribe: (() => void) | undefined;
  private claimFailures = 0;
  /**
   * Claims once this turn of the event loop is over: the runs of one claim end in the same turn
   * (their completions are committed together), and claiming on the first one's end would ask for
   * its slot alone, then for the rest — two claims where one serves, and on MongoDB a claim of one
   * job with flow limits costs a permit of its own.
   */
  private readonly claimAfterThisTurn = onceAfterThisTurn(() => void this.claimNow());
  /** After a failed claim, no claim before this instant (ms), however often the pool is woken. */
  private retryAfter = 0;
  private activity = 0;
  private readonly settleListeners = new Set<() => void>();
  private readonly pendingReleases = new Set<Promise<void>>();
  /** Aborted when the shutdown grace is over: every run still going is released. One for all runs. */
  private readonly shutdown = new ShutdownSignal();
  /** Queues paused in the store, as last read: claims leave them out. */
  private paused = new Set<string>();
  /** When the paused queues were last read (ms; -Infinity: never). */
  private pausedReadAt = -Infinity;

  constructor(private readonly o: WorkerPoolOptions) {}

  /** Starts claiming, once it knows which queues are paused (a paused queue is never claimed from, not even at start). */
  async start(): Promise<void> {
    if (this.state !== 'idle') return;
    this.state = 'running';
    this.unsubscribe = this.o.store.subscribe?.((event) => {
      if (this.o.queues.includes(event.queue) && this.demand.heard(event, this.o.clock.now().getTime())) void this.claimNow();
    });
    await this.readPaused();
    this.wake();
  }

  /** Asks for a claim soon: anything may have become claimable (no-op unless running). */
  wake(): void {
    void this.pump();
  }

  /** This process stored `jobs`: claims the ones due now (and ignores the store's echo of them). */
  noteEnqueued(jobs: readonly EnqueuedJob[]): void {
    // Not claiming yet: start() claims whatever is there, and no store announces to a pool not subscribed.
    if (this.state !== 'running') return;
    const mine = jobs.filter((job) => this.o.queues.includes(job.queue));
    if (this.demand.enqueued(mine, this.o.clock.now().getTime(), this.o.store.subscribe !== undefined)) void this.claimNow();
  }

  /** Claims and starts every due job the pool has room for; resolves when claiming is done (not the runs). */
  pump(): Promise<void> {
    this.demand.anything();
    return this.claimNow();
  }

  /** Claims what {@link ClaimDemand} says may be claimable. */
  private claimNow(): Promise<void> {
    if (this.state !== 'running') return Promise.resolve();
    if (this.pumping) {
      this.pumpAgain = true;
      return this.pumping;
    }
    this.pumping = (async () => {
      try {
        do {
          this.pumpAgain = false;
          await this.claimWhileRoom();
        } while (this.pumpAgain && this.state === 'running');
      } catch (err) {
        // claimWhileRoom handles store errors itself; this is a bug, and it must not kill the loop.
        const error = toError(err);
        this.o.logger.error({ err: error }, `The worker loop hit an unexpected error (${error.message}); it carries on`);
        this.o.events.emit('worker:error', { error, operation: 'pump' });
      } finally {
        this.pumping = null;
        this.schedulePoll();
      }
    })();
    return this.pumping;
  }

  /**
   * A cancel of `jobId` was requested through this process: if it runs here, abort it now instead
   * of at its next heartbeat. Returns whether it runs here.
   */
  requestCancel(jobId: string, reason?: string): boolean {
    let found = false;
    for (const slot of this.slots.toArray()) {
      if (slot.jobId !== jobId) continue;
      slot.ends.cancel(reason);
      found = true;
    }
    return found;
  }

  /** This process paused or resumed a queue: act on it now rather than at the next read of the store. */
  notePaused(queue: string, paused: boolean): void {
    if (paused) this.paused.add(queue);
    else if (this.paused.delete(queue)) this.wake();
  }

  /** Runs in flight in this pool. */
  inFlight(): InFlightRun[] {
    return this.slots.toArray().map(({ jobId, name, attempt }) => ({ jobId, name, attempt }));
  }

  /** A counter that moves whenever a claim returns jobs or a run ends (for test harnesses). */
  get activityCount(): number {
    return this.activity;
  }

  /** Resolves when the next run ends. */
  nextSettle(): Promise<void> {
    return new Promise((resolve) => {
      const listener = (): void => {
        this.settleListeners.delete(listener);
        resolve();
      };
      this.settleListeners.add(listener);
    });
  }

  /**
   * Stops claiming, lets runs in flight finish within `graceMs`, then aborts the rest (their
   * `ctx.signal` aborts and the runner releases them to the queue, attempt given back). Resolves
   * once every run's outcome is stored; a handler that ignores `ctx.signal` is not waited for
   * (the runner logs a warning naming its job).
   */
  async stop(graceMs: number): Promise<void> {
    if (this.state === 'stopped' || this.state === 'stopping') return;
    this.state = 'stopping';
    this.cancelPoll?.();
    this.unsubscribe?.();
    let graceOver = false;
    let cancelGrace: () => void = () => {};
    const grace = new Promise<void>((resolve) => {
      cancelGrace = this.o.clock.setTimer(() => {
        graceOver = true;
        resolve();
      }, graceMs);
    });
    if (this.pumping) await Promise.race([this.pumping, grace]);
    await Promise.race([this.all('done'), grace]);
    cancelGrace();
    if (graceOver) this.shutdown.abort();
    await this.all('settled');
    await Promise.all(this.pendingReleases);
    this.state = 'stopped';
  }

  private all(end: 'settled' | 'done'): Promise<void> {
    return Promise.all(this.slots.toArray().map((s) => s.ends[end])).then(() => undefined);
  }

  /**
   * Reads which queues are paused, at most once per poll interval: a pause made by any process
   * sharing the store holds here within one poll interval. A failed read keeps the last answer.
   */
  private async readPaused(): Promise<void> {
    this.pausedReadAt = this.o.clock.now().getTime();
    try {
      // Bounded as a claim is: a read that never answers (a connection a load balancer dropped
      // without a reset) would otherwise hold every later claim of this pool behind it.
      this.paused = new Set(await withDeadline(this.o.clock, 'pausedQueues', this.o.leaseMs, this.o.store.pausedQueues()));
      this.o.outage?.succeeded('pausedQueues');
    } catch (err) {
      const error = toError(err);
      const level = this.o.outage?.failed('pausedQueues', error) ? 'debug' : 'error';
      this.o.logger[level]({ err: error }, `Reading the paused queues failed (${error.message}); going on with the last known ones`);
      this.o.events.emit('worker:error', { error, operation: 'pausedQueues' });
    }
  }

  private async claimWhileRoom(): Promise<void> {
    const { clock, owner, leaseMs, pollMs, flow } = this.o;
    // Awaited only when due, so most claims start within the pump's first turn.
    if (clock.now().getTime() - this.pausedReadAt >= pollMs) await this.readPaused();
    flow?.refreshIfDue();
    await this.claimBatches();
    for (;;) {
      if (clock.now().getTime() < this.retryAfter) return;
      const plan = this.plan();
      if (!plan) return;
      const limit = this.demand.limit(plan.limit);
      if (limit <= 0) return;
      const ticket = this.demand.ticket();
      const queues = this.o.queues.filter((queue) => !this.paused.has(queue));
      let jobs: JobRecord[];
      // Names left out of this claim, or held back in it by a flow limit: a short answer says nothing about their jobs.
      const passedOver = [...plan.excludeNames];
      try {
        const now = clock.now();
        const limits = flow?.claimFlow(plan.names, now.getTime());
        const req: ClaimRequest = {
          owner,
          queues,
          names: plan.names,
          excludeNames: plan.excludeNames,
          limit,
          leaseUntil: new Date(now.getTime() + leaseMs),
          now,
        };
        const onHeld = (holds: FlowHold[]): void => {
          for (const hold of holds) passedOver.push(hold.name);
          flow!.onHeld(holds);
        };
        if (limits) Object.assign(req, { flow: limits, onHeld });
        jobs = await claimLeases(this.o, req, (job) => this.releaseUnstarted(job));
        this.claimFailures = 0;
        this.retryAfter = 0;
        this.o.outage?.succeeded('claim');
      } catch (err) {
        this.demand.failed();
        this.claimFailures++;
        this.retryAfter = clock.now().getTime() + this.pollDelay();
        const error = toError(err);
        // During an outage the outage's own line says it; each failed claim is a detail.
        const level = this.o.outage?.failed('claim', error) ? 'debug' : 'error';
        this.o.logger[level]({ err: error, failures: this.claimFailures }, `Claiming jobs failed (${error.message}); retrying in ${this.pollDelay()} ms`);
        this.o.events.emit('worker:error', { error, operation: 'claim' });
        return;
      }
      this.startClaimed(jobs);
      if (!this.demand.claimed(ticket, limit, jobs.length, passedOver) || this.state !== 'running') return;
    }
  }

  /**
   * The units of the engine's concurrency in use: one per run, but a batch handler's runs take one
   * per call (open or waiting for its answer), however many jobs it holds — and one per `size` of
   * its runs still in flight after their call answered (their outcomes not stored yet), so that at
   * most `concurrency` x `size` of its jobs are in flight however slow the store is.
   */
  private used(): number {
    let calls = 0;
    for (const def of this.o.registry.all()) {
      if (!def.batch) continue;
      const runs = this.runningByName.get(def.name) ?? 0;
      calls += Math.max(this.o.runner.batchCalls.calls(def.name), Math.ceil(runs / def.batch.size));
    }
    return this.slots.size - this.batchedRuns + calls;
  }

  /**
   * Claims for the batch handlers: for each, up to what its open call can still take, or — when
   * none is open and a unit of concurrency is free — up to its `size`, in one claim of that name
   * alone. The runs join their name's call (batch-calls.ts). Flow limits and the name's own
   * `concurrency` hold per job, as for any claim.
   */
  private async claimBatches(): Promise<void> {
    for (const def of this.o.registry.all()) {
      if (!def.batch || !this.o.queues.includes(def.queue)) continue;
      // A full claim may leave more due: go on while calls fill (each call is one unit of concurrency).
      for (let round = 0; round < MAX_BATCH_CLAIMS_PER_PUMP && (await this.claimBatch(def)); round++);
    }
  }

  /** One claim for the batch handler `def`; true when it filled what it asked for. */
  private async claimBatch(def: JobDefinition): Promise<boolean> {
    const { clock, owner, leaseMs, flow, runner } = this.o;
    if (this.paused.has(def.queue) || this.state !== 'running') return false;
    if (this.o.canClaim && !this.o.canClaim()) return false;
    const now = clock.now();
    if (now.getTime() < this.retryAfter || flow?.isHeld(def.name, now.getTime())) return false;
    if (!runner.batchCalls.isOpen(def.name) && this.used() >= this.o.concurrency) return false;
    const limit = Math.min(runner.batchCalls.room(def), def.concurrency - (this.runningByName.get(def.name) ?? 0));
    if (limit <= 0) return false;
    const req: ClaimRequest = { owner, queues: [def.queue], names: [def.name], limit, leaseUntil: new Date(now.getTime() + leaseMs), now };
    const limits = flow?.claimFlow([def.name], now.getTime());
    if (limits) Object.assign(req, { flow: limits, onHeld: (holds: FlowHold[]) => flow!.onHeld(holds) });
    let jobs: JobRecord[];
    try {
      jobs = await claimLeases(this.o, req, (job) => this.releaseUnstarted(job));
    } catch (err) {
      const error = toError(err);
      this.o.logger.error({ err: error }, `Claiming jobs of batch handler "${def.name}" failed (${error.message}); retrying at the next poll`);
      this.o.events.emit('worker:error', { error, operation: 'claim' });
      return false;
    }
    this.demand.batchClaimed(def.name, limit, jobs.length);
    this.startClaimed(jobs);
    return jobs.length === limit;
  }

  /**
   * What to claim next. Jobs whose own concurrency is used up are excluded; the batch is no larger
   * than the smallest remaining per-job room, so one claim can never overshoot a job's limit.
   * Batch handlers are claimed apart ({@link claimBatches}).
   */
  private plan(): { names: string[]; excludeNames: string[]; limit: number } | null {
    if (this.o.canClaim && !this.o.canClaim()) return null;
    let limit = this.o.concurrency - this.used();
    if (limit <= 0) return null;
    const names: string[] = [];
    const excludeNames: string[] = [];
    const now = this.o.clock.now().getTime();
    for (const def of this.o.registry.all()) {
      if (!this.o.queues.includes(def.queue) || this.paused.has(def.queue) || def.batch) continue;
      const room = def.concurrency - (this.runningByName.get(def.name) ?? 0);
      // A name held by a flow limit is left out until its window opens (the pool is woken then).
      if (room <= 0 || this.o.flow?.isHeld(def.name, now)) {
        excludeNames.push(def.name);
        continue;
      }
      names.push(def.name);
      limit = Math.min(limit, room);
    }
    return names.length === 0 ? null : { names, excludeNames, limit };
  }

  /** Starts the runs of claimed jobs, or gives them back when the pool is stopping. */
  private startClaimed(jobs: JobRecord[]): void {
    if (jobs.length > 0) this.activity++;
    for (const job of jobs) {
      if (this.state === 'running') this.startRun(job);
      else this.releaseUnstarted(job);
    }
  }

  private startRun(job: JobRecord): void {
    this.runningByName.set(job.name, (this.runningByName.get(job.name) ?? 0) + 1);
    const batched = this.o.registry.byName(job.name)?.batch !== undefined;
    const slot = new Slot(job.id, job.name, job.attempt, batched);
    if (batched) this.batchedRuns++;
    this.slots.add(slot);
    slot.ends = this.o.runner.run(job, this.shutdown, () => this.runDone(slot));
  }

  /** A run's slot is free (its outcome stored, its handler returned). */
  private runDone(slot: Slot): void {
    this.slots.delete(slot);
    if (slot.batched) this.batchedRuns--;
    this.runningByName.set(slot.name, (this.runningByName.get(slot.name) ?? 1) - 1);
    this.o.flow?.runEnded(slot.name);
    this.activity++;
    if (this.settleListeners.size > 0) for (const listener of [...this.settleListeners]) listener();
    // A claim that came back short saw every claimable job: a freed slot alone finds nothing new.
    if (this.demand.runEnded(slot.name)) this.claimAfterThisTurn();
  }

  /** A job claimed but not to be run (stopping, or the claim answered too late): give it straight back. */
  private releaseUnstarted(job: JobRecord): void {
    const release = releaseUnstarted(this.o, job, this.o.logger).finally(() => this.pendingReleases.delete(release));
    this.pendingReleases.add(release);
  }

  private pollDelay(): number {
    if (this.claimFailures === 0) return this.o.pollMs;
    return Math.min(Math.max(this.o.pollMs, 100) * 2 ** Math.min(this.claimFailures - 1, 20), MAX_ERROR_BACKOFF_MS);
  }

  private schedulePoll(): void {
    this.cancelPoll?.();
    this.cancelPoll = undefined;
    if (this.state !== 'running') return;
    this.cancelPoll = this.o.clock.setTimer(() => this.wake(), this.pollDelay());
  }
}
