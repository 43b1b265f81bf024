/**
 * A minimal array-backed binary min-heap. Hand-written rather than a dependency because core keeps
 * its dependency list to what users already need, and the claim path only needs push/peek/pop.
 * `before(a, b)` is true when `a` must come out before `b`.
 *
 * Items pushed in order (none before the last one pushed: jobs of one priority enqueued due, the
 * lease expiries of runs started one after another) skip the heap: they are appended to a sorted
 * run and taken from its front, O(1) each way; only an item pushed out of order goes into the
 * heap. `pop` takes the earlier of the two fronts. With 100,000 queued jobs a pop from the heap
 * alone walked 17 levels of entries scattered in memory: about a tenth of a MemoryStore run's CPU
 * (bench/README.md, "Issue 33 items 2/3").
 */
export class BinaryHeap<T> {
  readonly #items: T[] = [];
  /** The sorted run: items from `#runStart` on, in pop order. Slots before it are cleared. */
  readonly #run: (T | undefined)[] = [];
  #runStart = 0;

  constructor(private readonly before: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.#items.length + this.#run.length - this.#runStart;
  }

  peek(): T | undefined {
    return this.#fromRun() ? this.#run[this.#runStart] : this.#items[0];
  }

  push(item: T): void {
    const run = this.#run;
    if (this.#runStart === run.length || !this.before(item, run[run.length - 1] as T)) {
      run.push(item);
      return;
    }
    const items = this.#items;
    items.push(item);
    // Moves parents down into the hole and writes `item` once where it lands. (No destructuring
    // swaps: `[a, b] = [b, a]` allocated an array per step, 0.7 KB per claimed job in a heap profile.)
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(item, items[parent])) break;
      items[i] = items[parent];
      i = parent;
    }
    items[i] = item;
  }

  pop(): T | undefined {
    if (this.#fromRun()) return this.#shiftRun();
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) {
      items[0] = last;
      this.#siftDown(0);
    }
    return top;
  }

  /** Keeps only the items `keep` accepts and restores heap order, in O(n). */
  retain(keep: (item: T) => boolean): void {
    const items = this.#items;
    let kept = 0;
    for (const item of items) if (keep(item)) items[kept++] = item;
    items.length = kept;
    for (let i = (kept >> 1) - 1; i >= 0; i--) this.#siftDown(i);
    const run = this.#run;
    let inRun = 0;
    for (let i = this.#runStart; i < run.length; i++) if (keep(run[i] as T)) run[inRun++] = run[i];
    run.length = inRun;
    this.#runStart = 0;
  }

  /** Whether the next item comes from the sorted run rather than the heap. */
  #fromRun(): boolean {
    if (this.#runStart === this.#run.length) return false;
    return this.#items.length === 0 || !this.before(this.#items[0], this.#run[this.#runStart] as T);
  }

  #shiftRun(): T {
    const run = this.#run;
    const item = run[this.#runStart] as T;
    // Cleared, so a taken item is not kept alive by the run (it may be a whole finished job).
    run[this.#runStart++] = undefined;
    if (this.#runStart === run.length) {
      run.length = 0;
      this.#runStart = 0;
    } else if (this.#runStart >= 1024 && this.#runStart * 2 >= run.length) {
      run.splice(0, this.#runStart);
      this.#runStart = 0;
    }
    return item;
  }

  #siftDown(start: number): void {
    const items = this.#items;
    const n = items.length;
    const item = items[start];
    let i = start;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && this.before(items[right], items[left]) ? right : left;
      if (!this.before(items[child], item)) break;
      items[i] = items[child];
      i = child;
    }
    items[i] = item;
  }
}
