/**
 * `items.map(fn)`, always as a packed array. `Array.prototype.map` returns a packed or a holey
 * array depending on how far V8 has optimised the call, so code optimised on one kind meets the
 * other and deoptimises ("wrong map"), then recompiles: on the 100,000-job MemoryStore bench, the
 * claim's and the completion's arrays cost the engine's hot path one such round mid-run, ~70 ms of
 * compilation (bench/README.md, "Issue 33 items 2/3: one object per run (7 December)"). Arrays
 * built by `push` from `[]` keep one kind. For the arrays of a claim and of a completion batch.
 */
export function mapPacked<T, U>(items: readonly T[], fn: (item: T, index: number) => U): U[] {
  const out: U[] = [];
  for (let i = 0; i < items.length; i++) out.push(fn(items[i]!, i));
  return out;
}
