import type { Clock } from './clock.js';

interface Entry {
  fn: (() => void) | undefined;
  due: number;
  prev: Entry | undefined;
  next: Entry | undefined;
}

/**
 * Many timers of one and the same delay on a single clock timer, for what every run arms and
 * almost always cancels (heartbeats, outcome-write deadlines). With one delay, timers come due in
 * the order they were set, so a FIFO list replaces a timer per run: adding and cancelling are O(1)
 * and allocate one small node instead of a `Timeout`. The clock timer is armed for the oldest entry;
 * when that entry is cancelled the timer stays and, on firing early, re-arms for the next one.
 *
 * `setTimer` with any other delay goes straight to the clock. Should the clock step back, an entry
 * set after the step fires no earlier than the entries before it (late by at most the step).
 */
export class SameDelayTimers implements Pick<Clock, 'setTimer'> {
  private head: Entry | undefined;
  private tail: Entry | undefined;
  private cancelArmed: (() => void) | undefined;

  constructor(
    private readonly clock: Clock,
    /** The delay (ms) this list serves. */
    readonly ms: number,
  ) {}

  setTimer(fn: () => void, ms: number): () => void {
    if (ms !== this.ms) return this.clock.setTimer(fn, ms);
    const entry: Entry = { fn, due: this.clock.now().getTime() + ms, prev: this.tail, next: undefined };
    if (this.tail) this.tail.next = entry;
    else this.head = entry;
    this.tail = entry;
    if (!this.cancelArmed) this.arm();
    return () => this.unlink(entry);
  }

  private arm(): void {
    const head = this.head;
    if (!head) return;
    this.cancelArmed = this.clock.setTimer(() => this.fire(), Math.max(0, head.due - this.clock.now().getTime()));
  }

  private fire(): void {
    this.cancelArmed = undefined;
    const now = this.clock.now().getTime();
    const due: Array<() => void> = [];
    for (let entry = this.head; entry && entry.due <= now; entry = this.head) {
      due.push(entry.fn!);
      this.unlink(entry);
    }
    this.arm();
    // After re-arming, so a callback that sets or cancels timers finds the list consistent.
    for (const fn of due) fn();
  }

  private unlink(entry: Entry): void {
    if (!entry.fn) return;
    entry.fn = undefined;
    if (entry.prev) entry.prev.next = entry.next;
    else this.head = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    else this.tail = entry.prev;
    entry.prev = entry.next = undefined;
    if (!this.head && this.cancelArmed) {
      this.cancelArmed();
      this.cancelArmed = undefined;
    }
  }
}
