/**
 * The engine's only source of time. Every store operation receives `now` from it, so tests can
 * move time with a `FakeClock` and nothing ever waits on the wall clock to make progress.
 */
export interface Clock {
  /** The current time. */
  now(): Date;
  /**
   * Calls `fn` once `ms` of this clock's time has passed. Returns a function that cancels it.
   * A fake clock fires these when it is advanced; the system clock uses a real timer.
   */
  setTimer(fn: () => void, ms: number): () => void;
}

/** The wall clock, with real timers (unref'd: a pending timer never keeps a process alive). */
export class SystemClock implements Clock {
  now(): Date {
    return new Date();
  }

  setTimer(fn: () => void, ms: number): () => void {
    const handle = setTimeout(fn, Math.max(0, Math.min(ms, 2 ** 31 - 1)));
    handle.unref?.();
    return () => clearTimeout(handle);
  }
}

/**
 * `clock.now().getTime()`, without making a Date when `clock` is the system clock: the engine
 * reads the time in milliseconds several times per run (lease budget, deadlines, durations), and a
 * Date each time was a few % of a no-op job's CPU (bench/README.md, "Issue 33 items 2/3").
 */
export function nowMs(clock: Clock): number {
  return clock instanceof SystemClock ? Date.now() : clock.now().getTime();
}
