/**
 * A minimal array-backed binary min-heap. Hand-written rather than a dependency because core keeps
 * its dependency list to what users already need, and the claim path only needs push/peek/pop.
 * `before(a, b)` is true when `a` must come out before `b`.
 */
export class BinaryHeap<T> {
  readonly #items: T[] = [];

  constructor(private readonly before: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.#items.length;
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
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
