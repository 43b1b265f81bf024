/**
 * Resolves once `tick` has been called `target` times; rejects after `timeoutMs` naming how far it
 * got, so a stuck engine fails the run instead of hanging the benchmark.
 */
export class Countdown {
  private count = 0;
  private resolve!: () => void;
  private reject!: (err: Error) => void;
  readonly done: Promise<void>;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly target: number,
    private readonly what: string,
  ) {
    this.done = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    if (target === 0) this.resolve();
  }

  tick(): void {
    this.count++;
    if (this.count === this.target) {
      clearTimeout(this.timer);
      this.resolve();
    }
  }

  get value(): number {
    return this.count;
  }

  /** Waits for the target, failing after `timeoutMs` of real time. */
  wait(timeoutMs: number): Promise<void> {
    this.timer = setTimeout(() => this.reject(new Error(`${this.what}: only ${this.count} of ${this.target} after ${timeoutMs} ms`)), timeoutMs);
    return this.done;
  }
}

/** Sleeps until `performance.now()` reaches `at` (ms). */
export function sleepUntil(at: number): Promise<void> {
  const wait = at - performance.now();
  return wait <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, wait));
}
