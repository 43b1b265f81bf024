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

/** A MemoryStore with a `maintain` that records its calls, and fails (or never answers) the first time when told to. */
function maintainedStore(calls: Date[], first: 'answers' | 'fails' | 'hangs' = 'answers'): JobStore {
  const store = new MemoryStore();
  return Object.assign(store, {
    maintain: (now: Date): Promise<void> => {
      calls.push(now);
      if (calls.length > 1 || first === 'answers') return Promise.resolve();
      return first === 'fails' ? Promise.reject(new Error('database away')) : new Promise(() => {});
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
    const t = await createTestLoom({ jobs: [Noop], store: maintainedStore(calls, 'fails') });
    await t.advance('1h');
    expect(t.logs.some((l) => l.level === 'warn' && /Store maintenance failed/.test(l.msg))).toBe(true);
    await t.advance('1h');
    expect(calls).toHaveLength(2);
    await t.stop();
  });

  it('gives up a round that never answers when the next is due, and runs the next', async () => {
    const calls: Date[] = [];
    const t = await createTestLoom({ jobs: [Noop], store: maintainedStore(calls, 'hangs'), hungStoreCall: '200ms' });
    await t.advance('1h');
    // Moving the clock directly: the harness would (rightly) wait for the hanging call first.
    t.clock.advance('1h');
    await t.advance('1h');
    expect(t.logs.some((l) => l.level === 'warn' && /Store maintenance failed/.test(l.msg))).toBe(true);
    expect(calls).toHaveLength(2);
    await t.stop();
  });
});
