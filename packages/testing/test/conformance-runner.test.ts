import { describe, expect, it } from '@jest/globals';
import { MemoryStore, type JobStore } from '@loom/core';
import { runStoreConformance } from '../src/conformance-runner.js';

// The jest-free runner of the conformance suite (what `loom selftest` runs). Here inside jest, which
// also shows it puts jest's own globals back when it is done.
describe('runStoreConformance', () => {
  it('runs every case of the suite once, in order, and a correct store passes them all', async () => {
    const before = globalThis.describe;
    const seen: string[] = [];
    const results = await runStoreConformance('MemoryStore', () => ({ store: new MemoryStore() }), { onResult: (r) => seen.push(r.name) });
    expect(results.length).toBeGreaterThan(200);
    expect(results.filter((r) => !r.passed)).toEqual([]);
    expect(seen).toEqual(results.map((r) => r.name));
    expect(new Set(seen).size).toBe(seen.length);
    expect(results[0]!.name).toMatch(/^JobStore conformance: MemoryStore > /);
    expect(globalThis.describe).toBe(before);
  }, 120_000);

  it('reports the failing cases of a broken store, with the assertion, and runs the rest', async () => {
    // A store whose fenced completion answers 'completed' whatever the token: a stale lease's
    // completion is accepted, which the fencing cases must catch.
    const broken = (): JobStore => {
      const store = new MemoryStore();
      const completeMany = store.completeMany.bind(store);
      store.completeMany = async (items, now) => (await completeMany(items, now)).map(() => 'completed' as const);
      return store;
    };
    const results = await runStoreConformance('broken', () => ({ store: broken() }), { transactions: false });
    const failed = results.filter((r) => !r.passed);
    expect(failed.length).toBeGreaterThan(0);
    // Told `transactions: false`, the suite also expects the store to refuse what needs them
    // (dependencies, batches); a MemoryStore has transactions and does not refuse.
    const unexpected = failed.filter((r) => !/completeMany|lifecycle|fenc|no transactions|without transactions/.test(r.name));
    expect(unexpected.map((r) => r.name)).toEqual([]);
    expect(failed[0]!.error).toMatch(/expect\(received\)/);
    expect(results.filter((r) => r.passed).length).toBeGreaterThan(150);
    expect(results.some((r) => r.name.includes('withTransaction'))).toBe(false);
  }, 120_000);
});
