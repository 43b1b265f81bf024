/** A promise with its resolve function, made only for someone who waits. */
interface Waiter {
  promise: Promise<void>;
  resolve: () => void;
}

function waiter(): Waiter {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * The two ends of one run, as the worker pool sees them: the outcome is stored (or given up on),
 * and the handler has returned too (only then is the worker slot free: a handler that ignores
 * `ctx.signal` after a timeout or the shutdown grace keeps its slot until it returns, so one
 * process never runs a job twice at once).
 *
 * Flags and one callback (`onDone`) rather than promises: the pool hears of every run's end, but
 * only its `stop` waits for one, so the promises are made on demand. Chained promises per run for
 * these two ends were a measurable part of a no-op job's CPU (bench/README.md, "MemoryStore").
 */
export abstract class RunEnds {
  private outcomeSettled = false;
  private running = false;
  private finished = false;
  private settledWaiter: Waiter | undefined;
  private doneWaiter: Waiter | undefined;

  constructor(private readonly onDone: () => void) {}

  /** Aborts the run for a cancel of its job requested through this process (`jobs.cancel`). */
  abstract cancel(reason?: string): void;

  /** Resolves when the run's outcome is stored (or given up on). Never rejects. */
  get settled(): Promise<void> {
    if (this.outcomeSettled) return Promise.resolve();
    return (this.settledWaiter ??= waiter()).promise;
  }

  /** Resolves when the handler has also returned: the worker slot is free. Never rejects. */
  get done(): Promise<void> {
    if (this.finished) return Promise.resolve();
    return (this.doneWaiter ??= waiter()).promise;
  }

  /** The handler was called: the slot stays taken until {@link handlerReturned}. */
  handlerCalled(): void {
    this.running = true;
  }

  handlerReturned(): void {
    this.running = false;
    this.finishIfDone();
  }

  /** True from {@link handlerCalled} until {@link handlerReturned}. */
  get handlerRunning(): boolean {
    return this.running;
  }

  /** The run's outcome is stored or given up on. */
  settle(): void {
    this.outcomeSettled = true;
    this.settledWaiter?.resolve();
    this.finishIfDone();
  }

  private finishIfDone(): void {
    if (this.finished || !this.outcomeSettled || this.running) return;
    this.finished = true;
    this.doneWaiter?.resolve();
    this.onDone();
  }
}
