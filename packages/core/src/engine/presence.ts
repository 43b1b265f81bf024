import { hostname } from 'node:os';
import type { Clock } from '../support/clock.js';
import type { Logger } from '../support/logger.js';
import { toError } from '../support/to-error.js';
import { LOOM_VERSION } from '../support/version.js';
import { MAX_PRESENCE_JOB_IDS, type WorkerPresence } from '../store/presence.js';
import type { JobStore } from '../store/store.js';
import type { StoreOutage } from './store-outage.js';
import { withDeadline } from '../support/store-deadline.js';

/**
 * An engine that misses this many beats in a row counts as gone: its row's `expiresAt` is its last
 * beat plus this many intervals, so two late or failed beats in a row still leave it listed.
 */
export const PRESENCE_MISSED_BEATS = 3;

/** What a {@link PresenceBeat} needs. */
export interface PresenceBeatDeps {
  store: JobStore;
  clock: Clock;
  logger: Logger;
  outage?: StoreOutage;
  /** The engine's id (its `owner`). */
  id: string;
  everyMs: number;
  queues: readonly string[];
  concurrency: number;
  /** The job ids of the runs in flight now. */
  running: () => string[];
}

/**
 * Keeps this engine's presence row in the store while it runs: one write at `start`, one every
 * `everyMs` of the engine's clock (fixed rate: a slow write skips the beat it overlaps rather than
 * piling up), one marking it `stopping` when `stop` begins, and its deletion once the engine has
 * stopped. Each write is given half an interval to answer. A failed write is logged (at debug during a store outage, which is logged once) and
 * never stops the engine: the next beat writes the row again.
 */
export class PresenceBeat {
  readonly #deps: PresenceBeatDeps;
  #startedAt: Date | undefined;
  #state: WorkerPresence['state'] = 'running';
  #cancelTimer: (() => void) | undefined;
  /** The write in progress, if any. */
  #writing: Promise<void> | undefined;

  constructor(deps: PresenceBeatDeps) {
    this.#deps = deps;
  }

  /** Records the presence now and every `everyMs` after. */
  start(): void {
    if (this.#startedAt !== undefined) return;
    this.#startedAt = this.#deps.clock.now();
    this.#tick();
  }

  /** `loom.stop()` began: the row says `stopping` while runs finish. */
  stopping(): void {
    if (this.#startedAt === undefined) return;
    this.#state = 'stopping';
    void this.beat();
  }

  /** Stops beating and deletes the row (after any write in progress, so none recreates it). */
  async stop(): Promise<void> {
    if (this.#startedAt === undefined) return;
    this.#startedAt = undefined;
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    await this.#writing;
    try {
      // A store that hangs must not hold up a clean stop: the row then expires on its own.
      await withDeadline(this.#deps.clock, 'removePresence', this.#deadlineMs(), this.#deps.store.removePresence(this.#deps.id));
    } catch (err) {
      this.#failed('removePresence', toError(err), 'its row stays listed until it expires');
    }
  }

  /** The row a beat now writes. */
  presence(): WorkerPresence {
    const { clock, id, everyMs, queues, concurrency } = this.#deps;
    const now = clock.now();
    const running = this.#deps.running();
    return {
      id,
      host: hostname(),
      pid: process.pid,
      version: LOOM_VERSION,
      node: process.version,
      queues: [...queues],
      concurrency,
      running: running.length,
      runningJobIds: running.slice(0, MAX_PRESENCE_JOB_IDS),
      state: this.#state,
      startedAt: this.#startedAt ?? now,
      lastSeenAt: now,
      expiresAt: new Date(now.getTime() + PRESENCE_MISSED_BEATS * everyMs),
    };
  }

  /** Writes the row now, unless a write is in progress (that one is recent enough). Never rejects. */
  beat(): Promise<void> {
    if (this.#startedAt === undefined) return Promise.resolve();
    // A write that hangs must not stop the beats after it (nor a stop).
    this.#writing ??= withDeadline(this.#deps.clock, 'recordPresence', this.#deadlineMs(), this.#deps.store.recordPresence(this.presence()))
      .then(
        () => this.#deps.outage?.succeeded('recordPresence'),
        (err: unknown) => this.#failed('recordPresence', toError(err), 'the next beat tries again'),
      )
      .finally(() => {
        this.#writing = undefined;
      });
    return this.#writing;
  }

  /** How long a write may take: half an interval, so a hung one is given up before the next beat. */
  #deadlineMs(): number {
    return Math.max(1, Math.floor(this.#deps.everyMs / 2));
  }

  #tick(): void {
    if (this.#startedAt === undefined) return;
    this.#cancelTimer = this.#deps.clock.setTimer(() => this.#tick(), this.#deps.everyMs);
    void this.beat();
  }

  #failed(operation: string, error: Error, then: string): void {
    const level = this.#deps.outage?.failed(operation, error) ? 'debug' : 'warn';
    this.#deps.logger[level]({ err: error, operation }, `Recording this engine's presence failed (${operation}: ${error.message}); ${then}`);
  }
}
