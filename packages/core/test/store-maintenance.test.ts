import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, MemoryStore, STORE_MAINTENANCE_MS, type JobStore } from '@loom/core';
import { createTestLoom } from '@loom/testing';

// JobStore.maintain (issue 33: MongoStore deletes offloaded payloads of jobs retention removed) is
// called by a started engine every STORE_MAINTENANCE_MS with its clock's now, and not after stop.

@Job({ name: 'noop' })
class Noop {
  async run(): Promise<void> {}
}

/** A MemoryStore with a `maintain` that records its calls, and fails the first time when told to. */
function maintainedStore(calls: Date[], failFirst = false): JobStore {
  const store = new MemoryStore();
  return Object.assign(store, {
    maintain: async (now: Date): Promise<void> => {
      calls.push(now);
      if (failFirst && calls.length === 1) throw new Error('database away');
    },
  });
}

describe('store maintenance', () => {
  it('runs every hour while started, with the clock’s now, and stops with the engine', async () => {
    const calls: Date[] = [];
    const t = await createTestLoom({ jobs: [Noop], store: maintainedStore(calls) });
    const start = t.clock.now().getTime();
    await t.advance('59m');
    expect(calls).toHaveLength(0);
    await t.advance('1m');
    expect(calls.map((d) => d.getTime() - start)).toEqual([STORE_MAINTENANCE_MS]);
    await t.advance('2h');
    expect(calls).toHaveLength(3);
    await t.stop();
    await t.advance('2h');
    expect(calls).toHaveLength(3);
  });

  it('logs a failed round and runs again at the next', async () => {
    const calls: Date[] = [];
    const t = await createTestLoom({ jobs: [Noop], store: maintainedStore(calls, true) });
    await t.advance('1h');
    expect(t.logs.some((l) => l.level === 'warn' && /Store maintenance failed/.test(l.msg))).toBe(true);
    await t.advance('1h');
    expect(calls).toHaveLength(2);
    await t.stop();
  });
});
