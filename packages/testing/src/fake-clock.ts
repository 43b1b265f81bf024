import { toMs, type Clock, type Duration } from '@loom/core';

interface FakeTimer {
  at: number;
  seq: number;
  fn: () => void;
}

/** A documented reference instant for tests that do not care about the date. */
export const REFERENCE_TIME = '2026-01-01T00:00:00.000Z';

/**
 * A {@link Clock} whose time moves only when the test moves it. Timers fire in time order (ties in
 * the order they were set) as `advance` or `set` passes them, each seeing `now()` equal to its due
 * time. Moving backwards (`set` to an earlier date) fires nothing: use it to test clock reversal.
 */
export class FakeClock implements Clock {
  private current: number;
  private timers: FakeTimer[] = [];
  private seq = 0;

  constructor(start: Date | string | number = REFERENCE_TIME) {
    this.current = new Date(start).getTime();
    if (Number.isNaN(this.current)) throw new TypeError(`FakeClock: invalid start time ${String(start)}`);
  }

  now(): Date {
    return new Date(this.current);
  }

  setTimer(fn: () => void, ms: number): () => void {
    const timer: FakeTimer = { at: this.current + Math.max(0, Number.isFinite(ms) ? ms : 0), seq: this.seq++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Moves time forward by `duration`, firing every timer it passes. */
  advance(duration: Duration): void {
    this.moveTo(this.current + toMs(duration));
  }

  /** Jumps to `date`: forward (or to now) fires the timers due by then; backward fires none. */
  set(date: Date | string | number): void {
    const target = new Date(date).getTime();
    if (Number.isNaN(target)) throw new TypeError(`FakeClock.set: invalid date ${String(date)}`);
    if (target < this.current) {
      this.current = target;
      return;
    }
    this.moveTo(target);
  }

  /** When the earliest pending timer is due, or null when none is pending. */
  nextTimerAt(): Date | null {
    const next = this.earliest();
    return next ? new Date(next.at) : null;
  }

  /** How many timers are pending. */
  pendingTimers(): number {
    return this.timers.length;
  }

  private earliest(): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const t of this.timers) if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    return best;
  }

  private moveTo(target: number): void {
    // A timer that keeps re-arming itself at 0 ms would spin forever; fail loudly instead.
    for (let fired = 0; ; fired++) {
      const next = this.earliest();
      if (!next || next.at > target) break;
      if (fired > 1_000_000) throw new Error('FakeClock: more than a million timers fired in one move; a timer keeps re-arming itself without delay');
      this.timers = this.timers.filter((t) => t !== next);
      this.current = Math.max(this.current, next.at);
      next.fn();
    }
    this.current = target;
  }
}
