import type { Clock } from '../support/clock.js';
import { RepeatingTask } from '../support/repeating-task.js';
import type { Logger } from '../support/logger.js';
import type { JobStore } from '../store/store.js';
import type { EventBus, JobEventInfo } from './events.js';
import type { StoreOutage } from './store-outage.js';
import { withDeadline } from '../support/store-deadline.js';

/**
 * Wakes (or ends) the jobs that depend on jobs this engine finished: after every completion,
 * death or cancel it asks the store to settle those jobs' dependents (`settleDependents`), the
 * ids of one burst in one call, one call at a time. Every poll interval while started it also
 * settles what no engine did (a process died between a job's end and the settle, or a job was
 * cancelled from the command line): the store finds those from an index, reading no other job.
 */
/**
 * How often an engine that has met no dependencies sweeps for ends left unsettled (by a process
 * that died between a job's end and its settle): a command every poll would cost every engine, used
 * or not, one more command a second; one that has met them sweeps every poll interval.
 */
export const IDLE_SWEEP_MS = 5 * 60_000;

/**
 * Most dependencies watched at once. A watched job that finishes in another engine is never seen
 * here; past this many the oldest are dropped, which only delays their settle to the sweep (an
 * engine that watches sweeps every poll interval).
 */
const MAX_WATCHED = 10_000;

export class DependencySettler {
  readonly #pending = new Set<string>();
  /** Jobs this engine enqueued dependents of: their end is settled at once, as a job read with dependents. */
  readonly #watched = new Set<string>();
  /** Whether this engine has met dependencies (enqueued or finished such jobs): then it sweeps every poll. */
  #active = false;
  #running: Promise<void> | undefined;
  /** The periodic settle of what was left unsettled: every poll once active, else every idle sweep. */
  readonly #sweep: RepeatingTask;

  constructor(
    private readonly deps: {
      store: JobStore;
      clock: Clock;
      logger: Logger;
      events: EventBus;
      pollMs: number;
      leaseMs: number;
      onQueued: () => void;
      outage: StoreOutage;
    },
  ) {
    this.#sweep = new RepeatingTask(
      deps.clock,
      () => (this.#active ? deps.pollMs : Math.max(deps.pollMs, IDLE_SWEEP_MS)),
      () => this.#run(undefined),
    );
    // settle() never rejects: a failed call is logged, and the periodic settle does it later.
    // Only jobs the engine knows to have dependents: a store call per finished job would cost every
    // job a command. A dependent another engine enqueued while its dependency ran here (after this
    // engine read it) is settled by that engine's sweep, every poll interval, or by any engine's
    // idle sweep should that engine be gone.
    const note = ({ job }: { job: JobEventInfo }): void => {
      if (job.dependents === undefined && !this.#watched.delete(job.id)) return;
      this.#active = true;
      void this.settle([job.id]);
    };
    deps.events.on('job:completed', note);
    deps.events.on('job:dead', note);
    deps.events.on('job:cancelled', note);
  }

  /** Notes jobs a new job depends on (enqueued by this engine): their end settles at once. */
  watch(ids: readonly string[]): void {
    for (const id of ids) this.#watched.add(id);
    for (const oldest of this.#watched) {
      if (this.#watched.size <= MAX_WATCHED) break;
      this.#watched.delete(oldest);
    }
    this.#active = true;
  }

  /** Starts the periodic settle of what was left unsettled. */
  start(): void {
    this.#sweep.start();
  }

  stop(): void {
    this.#sweep.stop();
  }

  /** Settles the dependents of `ids` (finished jobs) soon; resolves once a call including them has run. */
  async settle(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.#pending.add(id);
    while (this.#pending.size > 0) {
      if (this.#running) {
        await this.#running;
        continue;
      }
      const jobIds = [...this.#pending];
      this.#pending.clear();
      this.#running = this.#run(jobIds).finally(() => (this.#running = undefined));
      await this.#running;
    }
  }

  async #run(jobIds: string[] | undefined): Promise<void> {
    const { store, clock, logger } = this.deps;
    try {
      // Bounded as a claim is: a call that never answers would hold every later settle behind it.
      const call = store.settleDependents(jobIds === undefined ? { now: clock.now() } : { now: clock.now(), jobIds });
      const settled = await withDeadline(clock, 'settleDependents', this.deps.leaseMs, call);
      this.deps.outage.succeeded('settleDependents');
      if (settled > 0) this.deps.onQueued();
    } catch (err) {
      // During an outage the engine's one line says so; each retry is at debug.
      const during = this.deps.outage.failed('settleDependents', err instanceof Error ? err : new Error(String(err)));
      (during ? logger.debug.bind(logger) : logger.error.bind(logger))(
        { err, jobIds },
        `Could not settle the dependents of ${jobIds === undefined ? 'finished jobs' : `jobs ${jobIds.join(', ')}`}; this engine tries again within its poll interval`,
      );
    }
  }
}
