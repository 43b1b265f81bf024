import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, MemoryStore, type JobStore } from '@loom/core';
import { createTestLoom, FakeClock } from '@loom/testing';

// Issue 12, defect 4: leases are judged by each engine's clock, so an engine whose clock is far
// from the database's must not claim (it would take over live leases). It measures its skew
// against store.serverTime at start and every third of the lease, and pauses claiming meanwhile.

let runs = 0;
@Job({ name: 'skew-job' })
class SkewJob {
  async run(): Promise<void> {
    runs++;
  }
}

/** A MemoryStore with a database clock `offset.ms` ahead of the engine's; its `hangingCall`-th read of it never answers. */
function storeWithServerClock(clock: FakeClock, offset: { ms: number }, hangingCall?: number): JobStore {
  const store = new MemoryStore();
  let reads = 0;
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'serverTime') return () => (++reads === hangingCall ? new Promise(() => {}) : Promise.resolve(new Date(clock.now().getTime() + offset.ms)));
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe('clock skew against the database', () => {
  it('stops claiming while the engine is 60 s behind the database, says so once, and resumes when the clocks agree', async () => {
    runs = 0;
    const clock = new FakeClock();
    const offset = { ms: 60_000 };
    const t = await createTestLoom({ jobs: [SkewJob], store: storeWithServerClock(clock, offset), clock, lease: '30s', maxClockSkew: '3s' });
    const { id } = await t.enqueue(SkewJob, undefined);
    await t.runUntilIdle();
    await t.advance('25s');
    expect(runs).toBe(0);
    expect((await t.getJob(id))?.status).toBe('queued');
    const errors = t.logs.filter((e) => e.level === 'error' && String(e.msg).includes("clock is 60000 ms behind the database's"));
    expect(errors).toHaveLength(1);
    expect(String(errors[0]?.msg)).toMatch(/stops claiming jobs/);

    offset.ms = 500; // NTP fixed it: within the 3 s allowed
    await t.advance('10s');
    expect(runs).toBe(1);
    expect(t.logs.some((e) => e.level === 'info' && String(e.msg).includes('claiming resumes'))).toBe(true);
    await t.stop();
  });

  it('goes on measuring after a read of the database clock that never answered', async () => {
    runs = 0;
    const clock = new FakeClock();
    const offset = { ms: 200 };
    const t = await createTestLoom({
      jobs: [SkewJob],
      store: storeWithServerClock(clock, offset, 2),
      clock,
      lease: '30s',
      maxClockSkew: '3s',
      hungStoreCall: '200ms',
    });
    await t.advance('10s'); // the second measurement never answers
    offset.ms = 60_000; // meanwhile the engine's clock falls a minute behind
    // Moving the clock directly: the harness would (rightly) wait for the hanging call first.
    t.clock.advance('30s');
    await t.advance('10s');
    expect(t.logs.map((e) => e.msg)).toContain(
      "Could not read the database's clock to measure this engine's skew (store.serverTime did not answer within 30000 ms; the engine stopped waiting for it); will try again",
    );
    expect(t.logs.filter((e) => e.level === 'error' && String(e.msg).includes("clock is 60000 ms behind the database's"))).toHaveLength(1);
    await t.enqueue(SkewJob, undefined);
    await t.advance('5s');
    expect(runs).toBe(0);
    await t.stop();
  });

  it('claims as usual when the clocks agree, and does not check at all with a fake clock unless asked', async () => {
    runs = 0;
    const clock = new FakeClock();
    const agreeing = await createTestLoom({ jobs: [SkewJob], store: storeWithServerClock(clock, { ms: 200 }), clock, lease: '30s', maxClockSkew: '3s' });
    await agreeing.enqueue(SkewJob, undefined);
    await agreeing.runUntilIdle();
    expect(runs).toBe(1);
    await agreeing.stop();

    const unchecked = await createTestLoom({ jobs: [SkewJob], store: storeWithServerClock(clock, { ms: 3_600_000 }), clock });
    await unchecked.enqueue(SkewJob, undefined);
    await unchecked.runUntilIdle();
    expect(runs).toBe(2);
    await unchecked.stop();
  });

  it('refuses a maxClockSkew that is not a duration', async () => {
    await expect(createTestLoom({ jobs: [SkewJob], maxClockSkew: 'soon' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('maxClockSkew'),
    });
  });
});
