import type { Clock } from './clock.js';

/**
 * Runs `run` on the clock's time while started: `delayMs()` after start, then `delayMs()` after
 * each round has settled (never two rounds at once; the delay is read anew each time). What `run`
 * does with its errors is its own: it should not reject.
 */
export class RepeatingTask {
  #cancelTimer: (() => void) | undefined;
  #started = false;

  constructor(
    private readonly clock: Clock,
    private readonly delayMs: () => number,
    private readonly run: () => Promise<void>,
  ) {}

  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#schedule();
  }

  stop(): void {
    this.#started = false;
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
  }

  #schedule(): void {
    if (!this.#started) return;
    this.#cancelTimer = this.clock.setTimer(() => void this.run().finally(() => this.#schedule()), this.delayMs());
  }
}
