import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, MemoryStore, type JobStore } from '@loom/core';
import { createTestLoom } from '@loom/testing';

// Issue 12, defect 15: an enqueue inside the caller's transaction must not wake this process's
// workers before the commit (their claim would find nothing); the commit announces the job.

let runs = 0;
@Job({ name: 'tx-enqueued' })
class TxEnqueued {
  async run(): Promise<void> {
    runs++;
  }
}

function countClaims(store: MemoryStore): { store: JobStore; claims: () => number } {
  let claims = 0;
  const wrapped = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (prop === 'claim') {
        return (...args: Parameters<MemoryStore['claim']>) => {
          claims++;
          return target.claim(...args);
        };
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: wrapped, claims: () => claims };
}

describe('enqueue inside a transaction', () => {
  it('claims nothing before the commit, and runs the job once it commits', async () => {
    runs = 0;
    const memory = new MemoryStore();
    const { store, claims } = countClaims(memory);
    const t = await createTestLoom({ jobs: [TxEnqueued], store, pollInterval: '1h' });
    await t.runUntilIdle();
    const before = claims();
    let id = '';
    await memory.withTransaction(async (session) => {
      ({ id } = await t.loom.enqueue(TxEnqueued, undefined, { session }));
      // One macrotask turn: a wake would have started its claim by then (t.settle() would pump itself).
      await new Promise((resolve) => setImmediate(resolve));
      expect(claims()).toBe(before);
    });
    // No clock movement: the commit itself announces the job.
    await t.runUntilIdle();
    expect(runs).toBe(1);
    expect(await t.getJob(id)).toMatchObject({ status: 'completed' });
    await t.stop();
  });
});
