/**
 * An abort controller whose `AbortSignal` is only made when someone reads it. Most handlers never
 * look at `ctx.signal`, and an `AbortController` per run was a measurable share of a short job's
 * CPU cost. Aborting before the signal exists is remembered: the signal is then born aborted, with
 * the first reason, exactly as an eager controller would have reported it.
 */
export class LazyAbort {
  private controller: AbortController | undefined;
  private abortedWith: { reason: unknown } | undefined;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortedWith) this.controller.abort(this.abortedWith.reason);
    }
    return this.controller.signal;
  }

  get aborted(): boolean {
    return this.abortedWith !== undefined;
  }

  /** Aborts with `reason`; later calls change nothing (the first reason stays, as with AbortController). */
  abort(reason: unknown): void {
    if (this.abortedWith) return;
    this.abortedWith = { reason };
    this.controller?.abort(reason);
  }
}

/** One registration of {@link ShutdownSignal}: a node of its doubly linked list (a class: see support/plain-constructor.ts). */
class ShutdownWaiter {
  prev: ShutdownWaiter | undefined = undefined;

  constructor(
    public fn: (() => void) | undefined,
    public next: ShutdownWaiter | undefined,
  ) {}
}

/**
 * The pool's shutdown, as many runs wait for it: a plain callback list rather than listeners on an
 * `AbortSignal` (an EventTarget listener per run costs more than the no-op run itself). A linked
 * list, not a Set: a Set with a registration added and deleted per run kept the deleted closures
 * (and with them whole finished runs) reachable long enough to be promoted to the old generation.
 */
export class ShutdownSignal {
  private head: ShutdownWaiter | undefined;
  private fired = false;

  get aborted(): boolean {
    return this.fired;
  }

  /** Calls `fn` once at shutdown (at once if it already happened). Returns a function that unregisters it. */
  onAbort(fn: () => void): () => void {
    if (this.fired) {
      fn();
      return () => {};
    }
    const waiter = new ShutdownWaiter(fn, this.head);
    if (this.head) this.head.prev = waiter;
    this.head = waiter;
    return () => this.remove(waiter);
  }

  abort(): void {
    if (this.fired) return;
    this.fired = true;
    const fns: Array<() => void> = [];
    for (let w = this.head; w; w = w.next) if (w.fn) fns.push(w.fn);
    this.head = undefined;
    for (const fn of fns) fn();
  }

  private remove(waiter: ShutdownWaiter): void {
    if (!waiter.fn) return;
    waiter.fn = undefined;
    if (waiter.prev) waiter.prev.next = waiter.next;
    else if (this.head === waiter) this.head = waiter.next;
    if (waiter.next) waiter.next.prev = waiter.prev;
    waiter.prev = waiter.next = undefined;
  }
}
