import { Loom, MemoryStore, toMs, type Duration, type JobClass, type JobStore, type Logger, type LoomOptions } from '@loom/core';
import { testHooks } from '@loom/core/internal';
import { CaptureLogger, type LogEntry } from './capture-logger.js';
import { FakeClock } from './fake-clock.js';
import { storeWritesSettled, trackStoreActivity, type StoreActivity } from './store-activity.js';

/** Options of {@link createTestLoom}: `Loom.create`'s, with test defaults. */
export interface TestLoomOptions extends Omit<LoomOptions, 'store' | 'clock' | 'jobs'> {
  /** The job classes under test. */
  jobs: readonly JobClass[];
  /** @default a new MemoryStore */
  store?: JobStore;
  /** @default a FakeClock at 2026-01-01T00:00:00Z */
  clock?: FakeClock;
  /** @default a CaptureLogger (entries in `t.logs`) */
  logger?: Logger;
  /** Start the workers right away. @default true */
  start?: boolean;
  /**
   * Real time a store call may stay pending, with nothing else happening, before the harness
   * treats it as hung on purpose and stops waiting for it. Raise it for a slow real database.
   * @default '3s'
   */
  hungStoreCall?: Duration;
  /**
   * Real time `runUntilIdle` waits for a run in flight that awaits real I/O outside the store (an
   * HTTP call, a file, a real timer) to make progress before it gives up and says the run waits on
   * engine time or on the test. Raise it for slow I/O.
   * @default '5s'
   */
  realIoTimeout?: Duration;
  /**
   * Where `@Job({ sandbox })` jobs run: `'inline'` (the default here) runs them on the engine's
   * thread through `container`/`resolve`, with the sandbox's rules still checked (results must
   * clone, `ctx.transaction` is refused); `{ module, threads }` runs them in real worker threads as
   * in production (real time: wait on events such as `job:completed`, not on the FakeClock).
   * @default 'inline'
   */
  sandbox?: LoomOptions['sandbox'];
  /**
   * How often the engine records its presence (`loom.workers.list()`). Off unless given: its beats
   * would be more steps for `advance` to take and more store calls for tests that count them.
   * @default false
   */
  presenceInterval?: LoomOptions['presenceInterval'];
}

/** Guards `advance` against a timer that keeps re-arming itself at the current instant. */
const MAX_ADVANCE_STEPS = 1_000_000;

const DEFAULT_HUNG_STORE_CALL_MS = 3_000;
const DEFAULT_REAL_IO_TIMEOUT_MS = 5_000;

/** Loom members the harness replaces (`stop` moves time through the grace). */
const NOT_FORWARDED = new Set<PropertyKey>(['constructor', 'stop']);

/**
 * The whole {@link Loom} facade (`enqueue`, `getJob`, `signal`, `deadLetters`, `schedules`, `on`,
 * `stats`, and whatever the engine adds later) is available on a {@link TestLoom}: each member is
 * forwarded to `t.loom`, except `stop`, which the harness drives through the fake clock.
 */
// Merged with the class below: TypeScript sees Loom's members on TestLoom, and the constructor
// forwards them at run time (forwardFacade).
// eslint-disable-next-line @typescript-eslint/no-empty-object-type, @typescript-eslint/no-unsafe-declaration-merging -- the merge is the point: Loom's members typed on the class, forwarded at run time
export interface TestLoom extends Omit<Loom, 'stop'> {}

/**
 * A Loom on a {@link FakeClock}, driven by the test: nothing runs late or early because of real
 * time. `runUntilIdle` runs what is due now; `advance` moves time through retries, delays,
 * sleeps, lease expiries and cron fires.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- merged with the interface above, on purpose (forwardFacade)
export class TestLoom {
  /** Entries logged by the default CaptureLogger (empty with your own logger). */
  readonly logs: LogEntry[];
  /** The next job due time as last read, the instant it was read at, and the count of settled store writes then (see nextJobDue). */
  private due: { writes: number; at: number; next: number | null } | undefined;

  constructor(
    readonly loom: Loom,
    /** The store the engine uses (wrapped to observe activity). */
    readonly store: JobStore,
    readonly clock: FakeClock,
    readonly logger: Logger,
    private readonly activity: StoreActivity,
    private readonly hungStoreCallMs = DEFAULT_HUNG_STORE_CALL_MS,
    private readonly realIoTimeoutMs = DEFAULT_REAL_IO_TIMEOUT_MS,
  ) {
    this.logs = logger instanceof CaptureLogger ? logger.entries : [];
    forwardFacade(this, loom);
  }

  /**
   * Runs every job due now, including the follow-ups those runs cause (retries without delay,
   * jobs they enqueue), and resolves when nothing due is left and no run is in flight. Time does
   * not move. A run that awaits real I/O outside the store (an HTTP call, a file) is waited for
   * as long as something moves within `realIoTimeout` (default 5 s of real time). A run that
   * moves not at all waits on engine time (its timeout, a FakeClock timer) or on a promise the
   * test controls: then it throws, naming the run; use {@link TestLoom.advance} or settle that
   * promise first.
   */
  async runUntilIdle(): Promise<void> {
    for (;;) {
      await this.settle();
      const inFlight = testHooks(this.loom).inFlight();
      if (inFlight.length === 0) return;
      if (await this.progressInRealTime()) continue;
      const list = inFlight.map((r) => `${r.name} (${r.jobId}, attempt ${r.attempt})`).join(', ');
      throw new Error(
        `runUntilIdle: ${inFlight.length} run(s) still in flight and nothing moved for ${this.realIoTimeoutMs} ms of real time: ${list}. ` +
          'They do not wait on real I/O (that would have moved): they wait on engine time (a job timeout, a lease, a FakeClock timer), ' +
          'which only moves with t.advance(...), or on a promise the test controls, which the test must settle first. ' +
          'If a run does wait on I/O slower than that, raise createTestLoom({ realIoTimeout }).',
      );
    }
  }

  /**
   * Waits in real time until a run ends or the store or worker pool does something, for at most
   * `realIoTimeout`. True when something moved: a handler awaiting real I/O got its answer.
   */
  private async progressInRealTime(): Promise<boolean> {
    const hooks = testHooks(this.loom);
    const mark = (): string => `${this.activity.settled}:${this.activity.pending}:${hooks.activityCount()}`;
    const before = mark();
    const deadline = performance.now() + this.realIoTimeoutMs;
    while (performance.now() < deadline) {
      // A short real timer rather than setImmediate: I/O gets the loop without spinning a core.
      await new Promise<void>((resolve) => setTimeout(resolve, 2));
      if (mark() !== before || hooks.inFlight().length === 0) return true;
    }
    return false;
  }

  /**
   * Moves the clock forward by `duration` in steps: to each due timer (heartbeats, timeouts, polls,
   * cron) and each job's due time (delays, retries, sleeps, lease expiries) in order, letting the
   * engine settle after each step. Runs still in flight at the end stay in flight.
   */
  async advance(duration: Duration): Promise<void> {
    const target = this.clock.now().getTime() + toMs(duration);
    // Writes the harness cannot see (the test's own, through the store it holds) happen between calls.
    this.due = undefined;
    await this.settle();
    for (let steps = 0; ; steps++) {
      const next = await this.nextDue();
      if (next === null || next > target) break;
      if (steps >= MAX_ADVANCE_STEPS) {
        throw new Error(
          `advance: more than ${MAX_ADVANCE_STEPS} steps before ${new Date(target).toISOString()}; something re-arms a timer without delay, or the poll interval is tiny for this span`,
        );
      }
      this.clock.set(Math.max(next, this.clock.now().getTime()));
      await this.settle();
    }
    this.clock.set(target);
    await this.settle();
  }

  /** Stops the engine (default grace: `shutdownGrace`), moving time through the grace if runs hang. */
  async stop(options: { grace?: Duration } = {}): Promise<void> {
    let done = false;
    const stopping = this.loom.stop(options).finally(() => {
      done = true;
    });
    await this.settle();
    while (!done) {
      const next = this.clock.nextTimerAt();
      if (!next) break;
      this.clock.set(next);
      await this.settle();
    }
    await stopping;
  }

  /**
   * Lets everything that can happen without time moving happen: claims, runs, store writes and
   * the promise chains between them. Unlike {@link TestLoom.runUntilIdle}, runs that wait on
   * something (time, a promise the test controls) may still be in flight afterwards. Settled when
   * no store call is pending and neither the store nor the worker pool did anything across two
   * event-loop turns (so a handler awaiting I/O outside the store is not waited for). A store call
   * still pending after `hungStoreCall` (default 3 s of real time) with nothing else happening
   * counts as hung and is not waited for.
   */
  async settle(): Promise<void> {
    const hooks = testHooks(this.loom);
    await hooks.pump();
    let last = '';
    let stable = 0;
    let unchangedSince = performance.now();
    while (stable < 2) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      const mark = `${this.activity.settled}:${hooks.activityCount()}`;
      const changed = mark !== last;
      if (changed) unchangedSince = performance.now();
      // A store call that stays pending with nothing else moving is one the test made hang on
      // purpose (a real store answers far sooner): stop waiting for it.
      let pendingCounts = this.activity.pending > 0;
      if (pendingCounts && performance.now() - unchangedSince >= this.hungStoreCallMs) {
        this.activity.writeOffPending();
        pendingCounts = false;
      }
      if (!changed && !pendingCounts) stable++;
      else stable = 0;
      last = mark;
    }
  }

  /** The earliest instant after now when something is due: a timer, a job's runAt, or a lease expiry. */
  private async nextDue(): Promise<number | null> {
    const now = this.clock.now().getTime();
    const timer = this.clock.nextTimerAt()?.getTime() ?? null;
    const job = await this.nextJobDue(now);
    return timer === null ? job : job === null ? timer : Math.min(timer, job);
  }

  /**
   * The earliest instant after `now` when a job becomes due (its runAt; a running job's lease
   * expiry). Read from the store again only after a write settled through a tracked store
   * ({@link storeWritesSettled}), at the start of an {@link TestLoom.advance}, or once the clock
   * has passed the instant read: most steps of an advance are polls that change nothing. A store
   * with `nextClaimableAt` answers in one bounded read; others list every live job.
   */
  private async nextJobDue(now: number): Promise<number | null> {
    const writes = storeWritesSettled();
    const cached = this.due;
    if (cached?.writes === writes && now >= cached.at && (cached.next === null || cached.next > now)) return cached.next;
    const next = this.store.nextClaimableAt ? ((await this.store.nextClaimableAt(new Date(now)))?.getTime() ?? null) : await this.listedJobDue(now);
    // The count from before the read: a write that settles during it makes the next step read again.
    this.due = { writes, at: now, next };
    return next;
  }

  /** {@link nextJobDue} for a store without `nextClaimableAt`: every live job listed. */
  private async listedJobDue(now: number): Promise<number | null> {
    let next: number | null = null;
    for (const job of await this.store.listJobs({ status: ['queued', 'running', 'waiting'] })) {
      const t = job.status === 'running' ? (job.lease ? job.lease.until.getTime() + 1 : undefined) : job.runAt.getTime();
      if (t !== undefined && t > now && (next === null || t < next)) next = t;
    }
    return next;
  }
}

/**
 * Builds a {@link TestLoom}: `Loom.create` with a MemoryStore, a FakeClock and a CaptureLogger
 * unless given others, started unless `start: false`.
 */
export async function createTestLoom(options: TestLoomOptions): Promise<TestLoom> {
  const clock = options.clock ?? new FakeClock();
  const logger = options.logger ?? new CaptureLogger();
  const { store, activity } = trackStoreActivity(options.store ?? new MemoryStore());
  const { start, hungStoreCall, realIoTimeout, ...rest } = options;
  // `container` and `resolve` pass through as given: Loom.create defaults to a new Container.
  const loom = await Loom.create({ pollInterval: '1m', presenceInterval: false, ...rest, sandbox: rest.sandbox ?? 'inline', store, clock, logger });
  if (start !== false) await loom.start();
  const ms = (d: Duration | undefined): number | undefined => (d === undefined ? undefined : toMs(d));
  return new TestLoom(loom, store, clock, logger, activity, ms(hungStoreCall), ms(realIoTimeout));
}

/**
 * Gives `harness` every member of `loom` it does not define itself: methods bound to `loom`,
 * properties (`deadLetters`, `schedules`, ...) read through. The members are read from the
 * instance and its prototype chain at run time, so facade members Loom gains later appear on
 * TestLoom without a change here.
 */
function forwardFacade(harness: TestLoom, loom: Loom): void {
  const keys = new Set<PropertyKey>(Reflect.ownKeys(loom));
  for (let proto = Object.getPrototypeOf(loom) as object | null; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object | null) {
    for (const key of Reflect.ownKeys(proto)) keys.add(key);
  }
  for (const key of keys) {
    if (NOT_FORWARDED.has(key) || key in harness) continue;
    Object.defineProperty(harness, key, {
      configurable: true,
      enumerable: false,
      get() {
        const value = (loom as unknown as Record<PropertyKey, unknown>)[key];
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(loom) : value;
      },
    });
  }
}
