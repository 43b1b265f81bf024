import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, LoomError, MemoryStore, type ClaimRequest, type JobRecord } from '@loom/core';
import { testHooks } from '@loom/core/internal';
import { createTestLoom, FakeClock } from '@loom/testing';
import { withDeadline } from '../src/engine/store-deadline.js';
import { deferred } from './deferred.js';

let runs = 0;
@Job({ name: 'counted' })
class Counted {
  async run(): Promise<void> {
    runs++;
  }
}

describe('store calls that hang', () => {
  it('withDeadline rejects at the deadline and hands a late answer to onLate', async () => {
    const clock = new FakeClock();
    const call = deferred<string>();
    const late: string[] = [];
    const waiting = withDeadline(clock, 'claim', 1_000, call.promise, (v) => late.push(v));
    clock.advance(1_000);
    await expect(waiting).rejects.toThrow('store.claim did not answer within 1000 ms');
    await waiting.catch((err: unknown) => expect(LoomError.is(err, 'STORE_TIMEOUT')).toBe(true));
    call.resolve('jobs');
    await call.promise;
    expect(late).toEqual(['jobs']);
  });

  it('a claim that never answers does not wedge the worker loop', async () => {
    runs = 0;
    const store = new MemoryStore();
    let claims = 0;
    const hangsOnce = new Proxy(store, {
      get: (target, prop) => {
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop === 'claim') {
          return (req: ClaimRequest): Promise<JobRecord[]> => (++claims === 1 ? new Promise(() => {}) : target.claim(req));
        }
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const t = await createTestLoom({ jobs: [Counted], store: hangsOnce, lease: '30s', pollInterval: '1s', start: false, hungStoreCall: '200ms' });
    const errors: string[] = [];
    t.loom.on('worker:error', (e) => errors.push(e.error.message));
    await t.enqueue(Counted);
    await t.loom.start();
    // Move the clock directly: the harness would (rightly) wait for the hanging call first.
    t.clock.advance('30s');
    await t.advance('2s');
    expect(errors).toEqual(['store.claim did not answer within 30000 ms; the engine stopped waiting for it']);
    expect(runs).toBe(1);
    await t.stop();
  });
});

describe('an outcome write that never answers', () => {
  it('gives up after the write deadline and frees the worker slot; the job runs again after its lease', async () => {
    runs = 0;
    const store = new MemoryStore();
    let completes = 0;
    const hangsOnce = new Proxy(store, {
      get: (target, prop) => {
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop === 'completeMany') {
          return (...args: Parameters<MemoryStore['completeMany']>) => (++completes === 1 ? new Promise(() => {}) : target.completeMany(...args));
        }
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const t = await createTestLoom({ jobs: [Counted], store: hangsOnce, lease: '30s', concurrency: 1, hungStoreCall: '200ms' });
    const errors: string[] = [];
    t.loom.on('worker:error', (e) => errors.push(e.error.message));
    const { id } = await t.enqueue(Counted);
    await t.settle();
    expect(runs).toBe(1);
    // Move the clock directly: the harness would (rightly) wait for the hanging call first.
    // The write may take what is left of the lease (30 s from the claim): past it, another worker may own the job.
    t.clock.advance('29s');
    expect(testHooks(t.loom).inFlight()).toHaveLength(1);
    t.clock.advance('1s');
    await t.settle();
    expect(errors).toEqual(['store.complete did not answer within 30000 ms; the engine stopped waiting for it']);
    expect(testHooks(t.loom).inFlight()).toHaveLength(0);
    await t.advance('1s');
    expect(runs).toBe(2);
    expect(await t.getJob(id)).toMatchObject({ status: 'completed', attempt: 2 });
    await t.stop();
  });
});
