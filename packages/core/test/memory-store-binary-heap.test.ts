import { describe, expect, it } from '@jest/globals';
import { BinaryHeap } from '../src/store/memory-store/binary-heap.js';

/** A seeded LCG: the same "random" sequence on every run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

describe('BinaryHeap (the MemoryStore claim index)', () => {
  it('pops in comparator order through interleaved pushes and pops', () => {
    const random = seeded(42);
    const heap = new BinaryHeap<number>((a, b) => a < b);
    const model: number[] = [];
    for (let i = 0; i < 5_000; i++) {
      if (random() < 0.6 || model.length === 0) {
        const value = Math.floor(random() * 1_000);
        heap.push(value);
        model.push(value);
      } else {
        model.sort((a, b) => a - b);
        expect(heap.peek()).toBe(model[0]);
        expect(heap.pop()).toBe(model.shift());
      }
      expect(heap.size).toBe(model.length);
    }
    model.sort((a, b) => a - b);
    const drained: number[] = [];
    while (heap.size > 0) drained.push(heap.pop()!);
    expect(drained).toEqual(model);
    expect(heap.pop()).toBeUndefined();
    expect(heap.peek()).toBeUndefined();
  });

  it('retain keeps only the accepted items, still in order', () => {
    const random = seeded(7);
    const heap = new BinaryHeap<number>((a, b) => a < b);
    const values = Array.from({ length: 1_000 }, () => Math.floor(random() * 10_000));
    for (const value of values) heap.push(value);
    heap.retain((value) => value % 3 === 0);
    const drained: number[] = [];
    while (heap.size > 0) drained.push(heap.pop()!);
    expect(drained).toEqual(values.filter((v) => v % 3 === 0).sort((a, b) => a - b));
  });

  it('pops in order when most pushes come in order (the sorted run) and some do not (the heap)', () => {
    const random = seeded(11);
    const heap = new BinaryHeap<number>((a, b) => a < b);
    const model: number[] = [];
    let next = 0;
    for (let i = 0; i < 20_000; i++) {
      const r = random();
      if (r < 0.55 || model.length === 0) {
        // Mostly the next value up (equal ones included); now and then one from the past.
        const value = random() < 0.9 ? (next += Math.floor(random() * 3)) : Math.floor(random() * next);
        heap.push(value);
        model.push(value);
      } else if (r < 0.995) {
        model.sort((a, b) => a - b);
        expect(heap.peek()).toBe(model[0]);
        expect(heap.pop()).toBe(model.shift());
      } else {
        heap.retain((value) => value % 4 !== 1);
        model.splice(0, model.length, ...model.filter((value) => value % 4 !== 1));
      }
      expect(heap.size).toBe(model.length);
    }
    model.sort((a, b) => a - b);
    const drained: number[] = [];
    while (heap.size > 0) drained.push(heap.pop()!);
    expect(drained).toEqual(model);
  });
});
