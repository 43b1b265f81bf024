import type { ScheduleControl } from './cron/schedule-control.js';
import { toMs, type Duration } from './support/duration.js';
import { EngineStateError, InvalidArgumentError } from './support/errors.js';
import { buildEngine, type Engine } from './engine/engine.js';
import { holdProcessOpen } from './support/keep-alive.js';
import type { EnqueueOptions } from './store/enqueue-options.js';
import type { LoomEventListener, LoomEventName } from './engine/events.js';
import type { JobClass, PayloadOf } from './jobs/job-class.js';
import type { DeadLetters } from './engine/dead-letters.js';
import type { EnqueueResult, JobRecord, StoreStats } from './store/job-record.js';
import type { LoomOptions } from './loom-options.js';
import { sendSignal } from './workflow/signals.js';
import type { Jobs } from './operations/jobs.js';
import type { Queues } from './operations/queues.js';
import type { Batches } from './engine/batches.js';
import type { Tokens } from './operations/tokens.js';
import type { Flows } from './operations/flows.js';
import type { Workers } from './operations/workers.js';
import type { SignalOptions } from './jobs/workflow-options.js';

/** `enqueue`'s arguments after the job class: the payload is optional when `run` accepts undefined. */
export type EnqueueArgs<C> =
  undefined extends PayloadOf<C> ? [payload?: PayloadOf<C>, options?: EnqueueOptions] : [payload: PayloadOf<C>, options?: EnqueueOptions];

/** `loom.stats()`: the store's counts plus this instance's workers. */
export interface LoomStats extends StoreStats {
  /** Runs in flight in this instance. */
  inFlight: number;
  concurrency: number;
}

/**
 * The engine behind each Loom, for the internal entry point (`internal.ts`, `@loom/core/internal`)
 * only: `index.ts` does not export {@link engineOf}, so it is not part of the public API.
 */
const engines = new WeakMap<Loom, Engine>();

/** @internal The engine a Loom is the facade of. */
export function engineOf(loom: Loom): Engine {
  const engine = engines.get(loom);
  if (engine === undefined) throw new InvalidArgumentError('loom', 'is not a Loom built by Loom.create');
  return engine;
}

/**
 * The Loom engine: stores jobs, runs them through `@Job` classes with leases, retries and dead
 * letters. Build one with {@link Loom.create}.
 */
export class Loom {
  /** The jobs that ran out of attempts or failed permanently. */
  readonly deadLetters: DeadLetters;
  /** Find and steer jobs: `list` (keyset pages), `get`, `cancel`, `retry`, `remove`. */
  readonly jobs: Jobs;
  /** Pause, resume and list queues (pauses are stored: they hold for every instance). */
  readonly queues: Queues;
  /** Groups of jobs with callbacks that run once when all have ended: `create`, `get` (progress). */
  readonly batches: Batches;
  /** Enqueue a DAG of jobs in one call, all or nothing: `flows.add({ nodes })`. */
  readonly flows: Flows;
  /** The cron schedules of this engine's jobs: `pause(name)`, `resume(name)`, `list()`. */
  readonly schedules: ScheduleControl;
  /** Settle wait tokens (`ctx.createWaitToken`): `complete(id, output)`, `reject(id, reason)`, `get(id)`. */
  readonly tokens: Tokens;
  /** The engine instances sharing the store that are alive: `list()` (host, pid, version, queues, what each runs). */
  readonly workers: Workers;
  private state: 'created' | 'started' | 'stopped' = 'created';
  private releaseProcess: (() => void) | undefined;

  private constructor(private readonly engine: Engine) {
    this.deadLetters = engine.deadLetters;
    this.jobs = engine.jobs;
    this.queues = engine.queues;
    this.batches = engine.batches;
    this.flows = engine.flows;
    this.schedules = engine.scheduling.control;
    this.tokens = engine.tokens;
    this.workers = engine.workers;
    engines.set(this, engine);
  }

  /**
   * Validates the options and every job's `@Job` options, discovers the job classes and builds
   * each once, through the inversify `container` or your `resolve` function (one of the two; with
   * neither, a new Container), and initialises the store. Fails with an error naming the class
   * and option on bad options, duplicate job names, or classes without `run`.
   */
  static async create(options: LoomOptions): Promise<Loom> {
    return new Loom(await buildEngine(options));
  }

  /** Starts the workers (and the cron scheduler). Calling it again is a no-op; after `stop` it throws. */
  async start(): Promise<void> {
    if (this.state === 'stopped') throw new EngineStateError('This Loom was stopped and cannot start again; create a new one with Loom.create');
    if (this.state === 'started') return;
    this.state = 'started';
    if (this.engine.options.keepAlive) this.releaseProcess = holdProcessOpen();
    // Claims wait for the first skew measurement (not start(): a slow store must not hold it up).
    void this.engine.skewGuard?.start();
    this.engine.telemetry.start();
    await this.engine.pool.start();
    this.engine.dependencies.start();
    this.engine.maintenance.start();
    await this.engine.scheduling.start();
    this.engine.presence?.start();
  }

  /**
   * Stops claiming, lets runs in flight finish within `grace` (default: `shutdownGrace`), then
   * aborts the rest and releases them to the queue: nothing is lost, nothing unfinished is acked.
   * The store is not closed (it is yours: call `store.close()`).
   */
  async stop(options: { grace?: Duration } = {}): Promise<void> {
    if (this.state === 'stopped') return;
    this.state = 'stopped';
    let graceMs = this.engine.options.shutdownGraceMs;
    if (options.grace !== undefined) {
      try {
        graceMs = toMs(options.grace);
      } catch (err) {
        throw new InvalidArgumentError('stop grace', (err as Error).message);
      }
    }
    this.engine.presence?.stopping();
    this.engine.skewGuard?.stop();
    this.engine.telemetry.stop();
    this.engine.flow.stop();
    this.engine.dependencies.stop();
    this.engine.maintenance.stop();
    try {
      await this.engine.scheduling.stop();
      await this.engine.pool.stop(graceMs);
    } finally {
      await this.engine.presence?.stop();
      // Runs have ended or were abandoned (their threads ended then): the idle threads go now.
      this.engine.sandbox?.close();
      this.releaseProcess?.();
    }
  }

  /**
   * Stores a job. The payload is checked against the job's schema and the plain-data rule first;
   * a refused payload throws `InvalidPayloadError` naming the path and stores nothing. A taken
   * idempotency key returns the existing job's id with `deduplicated: true`.
   */
  async enqueue<C extends JobClass>(job: C, ...args: EnqueueArgs<C>): Promise<EnqueueResult> {
    const [payload, options] = args;
    return this.engine.enqueuer.enqueue(job, payload, options);
  }

  /** Stores several jobs of one class; if any payload is refused, none is stored. Results are in input order. */
  async enqueueMany<C extends JobClass>(job: C, payloads: readonly PayloadOf<C>[], options?: Omit<EnqueueOptions, 'idempotencyKey'>): Promise<EnqueueResult[]> {
    return this.engine.enqueuer.enqueueMany(job, payloads, options);
  }

  /** A job by id (also a dead one), with its status, attempts, errors, steps and result; null if unknown. */
  getJob(id: string): Promise<JobRecord | null> {
    return this.engine.options.store.getJob(id);
  }

  /**
   * Sends a signal to a job, for `ctx.waitForSignal(name)`: a job waiting for it wakes at once; a
   * job not (yet) waiting keeps it until a run waits for that name. `data` must be plain data of
   * at most `MAX_STEP_RESULT_BYTES` (otherwise it throws and nothing is stored). Resolves true when
   * the signal was stored, false when the job does not exist or has already finished.
   *
   * `options.id` makes a retried send harmless: a signal with that id already stored on the job,
   * or already taken by its run, is not stored again (resolves true). A job holding
   * `MAX_PENDING_SIGNALS` (100) signals no run has taken yet refuses more with a
   * `TooManySignalsError` (`TOO_MANY_SIGNALS`), storing nothing.
   */
  signal(jobId: string, name: string, data?: unknown, options?: SignalOptions): Promise<boolean> {
    const { store, clock } = this.engine.options;
    return sendSignal({ store, clock, onDelivered: () => this.engine.pool.wake() }, jobId, name, data, options);
  }

  /** Listens to an engine event; returns a function that removes the listener. A throwing listener is logged, never fatal. */
  on<E extends LoomEventName>(event: E, listener: LoomEventListener<E>): () => void {
    return this.engine.events.on(event, listener);
  }

  /** Counts per queue and status, dead letters, and this instance's runs in flight. */
  async stats(): Promise<LoomStats> {
    const stats = await this.engine.options.store.stats();
    return { ...stats, inFlight: this.engine.pool.inFlight().length, concurrency: this.engine.options.concurrency };
  }
}
