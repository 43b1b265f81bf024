import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, MemoryStore, type JobStore } from '@loom/core';
import { createTestLoom } from '@loom/testing';

// A failover or a network cut is one event for an operator: the engine logs one line when its
// store stops answering and one when it answers again, however many claims, heartbeats and
// outcome writes failed meanwhile (each still retried, and logged at debug).

let release: (() => void) | undefined;

@Job({ name: 'long' })
class Long {
  async run(): Promise<string> {
    await new Promise<void>((resolve) => (release = resolve));
    return 'done';
  }
}

@Job({ name: 'quick' })
class Quick {
  async run(): Promise<string> {
    return 'quick';
  }
}

/**
 * A store that fails every operation with a network-style error while `down`, except the reads the
 * test kit itself makes to find what is due next (`nextClaimableAt`, `listJobs`, `getJob`).
 */
function switchableStore(store: JobStore): { store: JobStore; down: boolean; failed: number } {
  const state = { store: undefined as unknown as JobStore, down: false, failed: 0 };
  state.store = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      if (['isTransientError', 'nextClaimableAt', 'listJobs', 'getJob'].includes(prop)) return (value as (...a: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        if (state.down) {
          state.failed++;
          return Promise.reject(new Error(`connection reset during ${prop}`));
        }
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return state;
}

describe('a store outage', () => {
  it('is logged as one line when it begins and one when it ends; the failed claims, heartbeats and writes are retried', async () => {
    const switchable = switchableStore(new MemoryStore());
    const t = await createTestLoom({ jobs: [Long, Quick], store: switchable.store, lease: '30s', pollInterval: '1s' });
    const { id: long } = await t.enqueue(Long);
    await t.advance('1s');
    expect((await t.getJob(long))?.status).toBe('running');

    switchable.down = true;
    await t.advance('25s'); // claims every poll and two heartbeats fail
    const { id: quick } = await t.loom.enqueue(Quick, undefined).catch(() => ({ id: '' }));
    expect(quick).toBe(''); // the enqueue itself fails: the store is down
    release?.(); // the run ends while the store is down: its completion is retried
    await t.advance('3s');
    expect(switchable.failed).toBeGreaterThan(10);

    switchable.down = false;
    await t.advance('5s');
    const { id: after } = await t.enqueue(Quick);
    await t.runUntilIdle();
    expect(await t.getJob(long)).toMatchObject({ status: 'completed', result: 'done' });
    expect((await t.getJob(after))?.status).toBe('completed');

    const loud = t.logs.filter((e) => e.level === 'warn' || e.level === 'error').map((e) => e.msg);
    expect(loud).toEqual([
      expect.stringMatching(
        /^The store is not answering \(claim: connection reset during claim\); claims pause and writes are retried until it answers again$/,
      ),
      expect.stringMatching(/^The store answers again after \d+\.\d s \(\d+ operation\(s\) failed meanwhile and were retried\)$/),
    ]);
    expect(t.logs.filter((e) => e.level === 'debug' && /connection reset/.test(e.msg)).length).toBeGreaterThan(5);
    await t.stop();
  });

  it('a failure the store calls permanent is no outage: logged at once as an error of its own', async () => {
    const switchable = switchableStore(new MemoryStore());
    const store = Object.assign(Object.create(switchable.store) as JobStore, { isTransientError: () => false });
    const t = await createTestLoom({ jobs: [Quick], store, pollInterval: '1s' });
    switchable.down = true;
    await t.advance('3s');
    switchable.down = false;
    await t.advance('1s');
    const errors = t.logs.filter((e) => e.level === 'error').map((e) => e.msg);
    expect(errors.filter((msg) => /^Claiming jobs failed \(connection reset during claim\)/.test(msg)).length).toBeGreaterThanOrEqual(2);
    expect(t.logs.filter((e) => /not answering|answers again/.test(e.msg))).toEqual([]);
    await t.stop();
  });
});
