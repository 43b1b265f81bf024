import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, Loom, LoomError, MemoryStore, RateLimitedError, type ClaimRequest, type JobClass, type JobContext, type JobStore } from '@loom/core';
import { createTestLoom, FakeClock, type TestLoom } from '@loom/testing';
import { deferred, type Deferred } from './deferred.js';
import { hangingOnCall } from './hanging-store.js';

// Flow control through the engine: limits from @Job options reach the store's claims, held names
// cost no claims until their window opens, and RateLimitedError holds a name in every engine.
// The store side (atomicity, every store) is in the conformance suite (`flow control`).

/** Runs in flight per job name, and the most seen at once. */
class Gauge {
  running = 0;
  peak = 0;
  started = 0;
  readonly gates: Deferred[] = [];

  async enter(): Promise<void> {
    this.running += 1;
    this.started += 1;
    this.peak = Math.max(this.peak, this.running);
    const gate = deferred();
    this.gates.push(gate);
    await gate.promise;
    this.running -= 1;
  }

  /** Lets every run in flight finish. */
  releaseAll(): void {
    for (const gate of this.gates.splice(0)) gate.resolve();
  }
}

const gauge = new Gauge();

@Job({ name: 'global-two', globalConcurrency: 2 })
class GlobalTwo {
  async run(): Promise<void> {
    await gauge.enter();
  }
}

const starts: number[] = [];
@Job({ name: 'three-per-second', rateLimit: { limit: 3, per: '1s' } })
class ThreePerSecond {
  async run(_: unknown, ctx: JobContext): Promise<void> {
    starts.push(clockOf(ctx));
  }
}

let limitedCalls = 0;
@Job({ name: 'calls-api', retries: 0 })
class CallsApi {
  async run(payload: { limited?: boolean }): Promise<string> {
    limitedCalls += 1;
    if (payload.limited && limitedCalls === 1) throw new RateLimitedError('30s');
    return 'ok';
  }
}

@Job({ name: 'calls-limited-api', retries: 0, rateLimit: { limit: 100, per: '1m', key: (p: { tenant: string }) => p.tenant } })
class CallsLimitedApi {
  async run(payload: { tenant: string; limited?: boolean }): Promise<string> {
    limitedCalls += 1;
    if (payload.limited && limitedCalls === 1) throw new RateLimitedError('30s');
    return payload.tenant;
  }
}

const served: string[] = [];
@Job({ name: 'per-tenant', group: { key: (p: { tenant: string }) => p.tenant, concurrency: 1 } })
class PerTenant {
  async run(payload: { tenant: string }): Promise<void> {
    served.push(payload.tenant);
  }
}

@Job({ name: 'bad-key', group: { key: (p: { tenant?: unknown }) => p.tenant as string, concurrency: 1 } })
class BadKey {
  async run(): Promise<void> {}
}

const reindexed: Array<{ docId: string; version: number; at: number }> = [];
@Job({ name: 'reindex', debounce: { key: (p: { docId: string }) => `reindex:${p.docId}`, delay: '5s' } })
class Reindex {
  async run(payload: { docId: string; version: number }): Promise<void> {
    reindexed.push({ ...payload, at: clock.now().getTime() });
  }
}

let clock: FakeClock;
const clockOf = (_ctx: JobContext): number => clock.now().getTime();

/** Counts the store's claims. */
function countingClaims(store: JobStore): { store: JobStore; claims: ClaimRequest[] } {
  const claims: ClaimRequest[] = [];
  const counted = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop === 'claim') {
        return (req: ClaimRequest) => {
          claims.push(req);
          return target.claim(req);
        };
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: counted, claims };
}

async function twoEngines(jobs: JobClass[], store: JobStore = new MemoryStore()): Promise<[TestLoom, TestLoom]> {
  clock = new FakeClock();
  const a = await createTestLoom({ jobs, store, clock, concurrency: 10, owner: 'engine-a' });
  const b = await createTestLoom({ jobs, store, clock, concurrency: 10, owner: 'engine-b' });
  return [a, b];
}

describe('flow control through the engine', () => {
  it('globalConcurrency holds across two engines of concurrency 10; every job runs', async () => {
    const [a, b] = await twoEngines([GlobalTwo]);
    gauge.peak = 0;
    gauge.started = 0;
    await a.loom.enqueueMany(
      GlobalTwo,
      Array.from({ length: 8 }, () => ({})),
    );
    for (let round = 0; round < 6; round++) {
      await a.settle();
      await b.settle();
      expect(gauge.running).toBeLessThanOrEqual(2);
      gauge.releaseAll();
      await a.advance('1s');
    }
    await a.runUntilIdle();
    await b.runUntilIdle();
    expect(gauge.started).toBe(8);
    expect(gauge.peak).toBe(2);
    await a.stop();
    await b.stop();
  });

  it('rateLimit: exact starts per window; a held name costs no claims, and the engine wakes when its window opens', async () => {
    clock = new FakeClock();
    starts.length = 0;
    const { store, claims } = countingClaims(new MemoryStore());
    // A one-hour poll: anything that starts within the test was woken by the window opening.
    const t = await createTestLoom({ jobs: [ThreePerSecond], store, clock, pollInterval: '1h' });
    await t.loom.enqueueMany(
      ThreePerSecond,
      Array.from({ length: 7 }, () => ({})),
    );
    await t.runUntilIdle();
    const t0 = clock.now().getTime();
    expect(starts).toEqual([t0, t0, t0]);
    // The engine set its wake for the instant the window opens (the poll is an hour away).
    expect(clock.nextTimerAt()).toEqual(new Date(t0 + 1_000));
    const claimsWhileHeld = claims.length;
    await t.advance('999ms');
    expect(starts).toHaveLength(3);
    expect(claims.length).toBe(claimsWhileHeld);
    await t.advance('1ms');
    expect(starts.slice(3)).toEqual([t0 + 1_000, t0 + 1_000, t0 + 1_000]);
    await t.advance('1s');
    expect(starts.slice(6)).toEqual([t0 + 2_000]);
    await t.stop();
  });

  it('RateLimitedError gives the attempt back; a job with a rate limit holds its key in every engine at once', async () => {
    const [a, b] = await twoEngines([CallsLimitedApi]);
    limitedCalls = 0;
    const suspended: Array<{ reason: string; until?: Date }> = [];
    a.loom.on('job:suspended', (e) => suspended.push(e));
    b.loom.on('job:suspended', (e) => suspended.push(e));
    const first = await a.loom.enqueue(CallsLimitedApi, { tenant: 'acme', limited: true });
    await a.runUntilIdle();
    await b.runUntilIdle();
    const t0 = clock.now().getTime();
    expect(limitedCalls).toBe(1);
    expect(await a.getJob(first.id)).toMatchObject({ status: 'queued', attempt: 0, runAt: new Date(t0 + 30_000) });
    expect(suspended).toEqual([{ job: expect.objectContaining({ id: first.id }), reason: 'rate limited', until: new Date(t0 + 30_000) }]);
    // Through the other engine: the held key waits for the hold's end, another key runs at once.
    const second = await b.loom.enqueue(CallsLimitedApi, { tenant: 'acme' });
    const other = await b.loom.enqueue(CallsLimitedApi, { tenant: 'globex' });
    await b.runUntilIdle();
    expect((await b.getJob(other.id))?.status).toBe('completed');
    await b.advance('29s');
    expect((await b.getJob(second.id))?.status).toBe('queued');
    expect(limitedCalls).toBe(2);
    await b.advance('1s');
    await a.runUntilIdle();
    expect(limitedCalls).toBe(4);
    expect(await a.getJob(first.id)).toMatchObject({ status: 'completed', attempt: 1 });
    expect((await b.getJob(second.id))?.status).toBe('completed');
    await a.stop();
    await b.stop();
  });

  it('RateLimitedError of a job without limits holds its name in every engine from its next poll on', async () => {
    clock = new FakeClock();
    const store = new MemoryStore();
    const a = await createTestLoom({ jobs: [CallsApi], store, clock, owner: 'engine-a', pollInterval: '1s' });
    const b = await createTestLoom({ jobs: [CallsApi], store, clock, owner: 'engine-b', pollInterval: '1s' });
    limitedCalls = 0;
    const first = await a.loom.enqueue(CallsApi, { limited: true });
    await a.runUntilIdle();
    const t0 = clock.now().getTime();
    expect(await a.getJob(first.id)).toMatchObject({ status: 'queued', attempt: 0, runAt: new Date(t0 + 30_000) });
    await b.advance('1s');
    const second = await b.loom.enqueue(CallsApi, {});
    await a.loom.enqueue(CallsApi, {});
    await b.advance('28s');
    expect(limitedCalls).toBe(1);
    expect((await b.getJob(second.id))?.status).toBe('queued');
    await b.advance('1s');
    await a.runUntilIdle();
    expect(limitedCalls).toBe(4);
    await a.stop();
    await b.stop();
  });

  it('a read of the holds that never answered does not keep an engine from learning a later hold', async () => {
    clock = new FakeClock();
    const store = new MemoryStore();
    // Engine b's first read of the holds never answers.
    const { store: hanging, calls: reads } = hangingOnCall('flowHolds', 1, store);
    const a = await createTestLoom({ jobs: [CallsApi], store, clock, owner: 'engine-a', pollInterval: '1s' });
    const b = await createTestLoom({ jobs: [CallsApi], store: hanging, clock, owner: 'engine-b', pollInterval: '1s', lease: '5s', hungStoreCall: '200ms' });
    expect(reads()).toBe(1);
    // Moving the clock directly: the harness would (rightly) wait for the hanging call first.
    clock.advance('5s');
    limitedCalls = 0;
    await a.loom.enqueue(CallsApi, { limited: true }); // holds the name for 30 s in every engine
    await a.runUntilIdle();
    await b.advance('1s'); // b reads the holds again
    const second = await b.loom.enqueue(CallsApi, {});
    await b.advance('20s');
    expect(limitedCalls).toBe(1);
    expect((await b.getJob(second.id))?.status).toBe('queued');
    await a.stop();
    await b.stop();
  });

  it('group: a tenant with one job is served within the next runs after one with a long backlog', async () => {
    clock = new FakeClock();
    served.length = 0;
    const t = await createTestLoom({ jobs: [PerTenant], clock, concurrency: 1 });
    await t.loom.enqueueMany(
      PerTenant,
      Array.from({ length: 200 }, () => ({ tenant: 'big' })),
    );
    await t.loom.enqueue(PerTenant, { tenant: 'small' });
    await t.runUntilIdle();
    expect(served).toHaveLength(201);
    expect(served.indexOf('small')).toBeLessThanOrEqual(2);
    await t.stop();
  });

  it('group: with 10,000 jobs of one key queued first, a key with one job is among the next two claims (MemoryStore; the conformance suite runs 1,000 on every store)', async () => {
    const store = new MemoryStore();
    const at = new Date('2026-01-01T00:00:00Z');
    const job = (groupKey: string, runAt: Date) => ({ name: 'per-tenant', queue: 'default', payload: {}, priority: 0, runAt, maxAttempts: 1, groupKey });
    await store.enqueue(
      Array.from({ length: 10_000 }, () => job('big', new Date(at.getTime() - 60_000))),
      { now: at },
    );
    const [small] = await store.enqueue([job('small', at)], { now: at });
    const claimed: string[] = [];
    for (let i = 0; i < 2; i++) {
      const req: ClaimRequest = {
        owner: 'w',
        queues: ['default'],
        names: ['per-tenant'],
        limit: 1,
        now: at,
        leaseUntil: new Date(at.getTime() + 30_000),
        flow: [{ name: 'per-tenant', group: { concurrency: 100 } }],
      };
      claimed.push(...(await store.claim(req)).map((j) => j.id));
    }
    expect(claimed).toContain(small!.id);
  });

  it('a key function that throws or returns a non-string fails the enqueue with INVALID_FLOW_KEY, storing nothing', async () => {
    const t = await createTestLoom({ jobs: [BadKey], start: false });
    for (const payload of [{}, { tenant: 7 }, { tenant: '' }]) {
      const err = await t.loom.enqueue(BadKey, payload).catch((e: unknown) => e);
      expect(LoomError.is(err, 'INVALID_FLOW_KEY')).toBe(true);
      expect((err as Error).message).toContain('Job "bad-key": its group.key function');
    }
    const err = await t.loom.enqueueMany(BadKey, [{ tenant: 'a' }, { tenant: 5 }]).catch((e: unknown) => e);
    expect(LoomError.is(err, 'INVALID_FLOW_KEY')).toBe(true);
    expect(await t.store.listJobs({})).toEqual([]);
    await t.stop();
  });

  it('debounce: five enqueues inside the delay make one run, with the last payload, delay after the last enqueue', async () => {
    clock = new FakeClock();
    reindexed.length = 0;
    const t = await createTestLoom({ jobs: [Reindex], clock });
    const t0 = clock.now().getTime();
    const ids = new Set<string>();
    for (let version = 1; version <= 5; version++) {
      ids.add((await t.loom.enqueue(Reindex, { docId: 'doc-1', version })).id);
      await t.advance('1s');
    }
    await t.loom.enqueue(Reindex, { docId: 'doc-2', version: 1 });
    expect(ids.size).toBe(1);
    expect(reindexed).toEqual([]);
    await t.advance('5s');
    expect(reindexed).toEqual([
      { docId: 'doc-1', version: 5, at: t0 + 4_000 + 5_000 },
      { docId: 'doc-2', version: 1, at: t0 + 5_000 + 5_000 },
    ]);
    // Once a job of a key has started, the next enqueue of that key makes a new job.
    const later = await t.loom.enqueue(Reindex, { docId: 'doc-1', version: 6 });
    expect(ids.has(later.id)).toBe(false);
    await t.advance('5s');
    expect(reindexed.at(-1)).toMatchObject({ docId: 'doc-1', version: 6 });
    await t.stop();
  });

  it('debounce refuses delay, runAt and idempotencyKey at enqueue, and a transaction', async () => {
    const t = await createTestLoom({ jobs: [Reindex], start: false });
    for (const options of [{ delay: '1s' }, { runAt: new Date() }, { idempotencyKey: 'k' }]) {
      const err = await t.loom.enqueue(Reindex, { docId: 'd', version: 1 }, options).catch((e: unknown) => e);
      expect(LoomError.is(err, 'INVALID_ARGUMENT')).toBe(true);
      expect((err as Error).message).toContain('is debounced');
    }
    const err = await t.store.withTransaction!((session) => t.loom.enqueue(Reindex, { docId: 'd', version: 1 }, { session })).catch((e: unknown) => e);
    expect(LoomError.is(err, 'INVALID_ARGUMENT')).toBe(true);
    expect((err as Error).message).toContain('cannot be enqueued inside a transaction');
    expect(await t.store.listJobs({})).toEqual([]);
    await t.stop();
  });

  it('RateLimitedError refuses a bad duration', () => {
    expect(() => new RateLimitedError('soon' as never)).toThrow(/RateLimitedError: retryAfter/);
    expect(new RateLimitedError('2m').retryAfterMs).toBe(120_000);
    expect(new RateLimitedError(500).code).toBe('RATE_LIMITED');
  });
});

describe('flow-control options are validated at Loom.create', () => {
  const quiet = {
    debug() {},
    info() {},
    warn() {},
    error() {},
    child() {
      return this;
    },
  };
  it.each([
    ['rateLimit: 5', { rateLimit: 5 }, 'rateLimit', 'must be { limit, per, key? }'],
    ['rateLimit.limit: 0', { rateLimit: { limit: 0, per: '1s' } }, 'rateLimit.limit', 'must be >= 1'],
    ['rateLimit.limit missing', { rateLimit: { per: '1s' } }, 'rateLimit.limit', 'is required'],
    ['rateLimit.per: 0', { rateLimit: { limit: 5, per: 0 } }, 'rateLimit.per', 'longer than 0'],
    ['rateLimit.per missing', { rateLimit: { limit: 5 } }, 'rateLimit.per', 'is required'],
    ['rateLimit.key: "tenant"', { rateLimit: { limit: 5, per: '1s', key: 'tenant' } }, 'rateLimit.key', 'must be a function'],
    ['rateLimit.limit: 20000', { rateLimit: { limit: 20_000, per: '1s' } }, 'rateLimit.limit', 'must be <= 10000'],
    ['globalConcurrency: 0', { globalConcurrency: 0 }, 'globalConcurrency', 'must be >= 1'],
    ['globalConcurrency: 1.5', { globalConcurrency: 1.5 }, 'globalConcurrency', 'must be an integer'],
    ['group without key', { group: { concurrency: 2 } }, 'group.key', 'is required'],
    ['group.concurrency: 0', { group: { key: (): string => 'k', concurrency: 0 } }, 'group.concurrency', 'must be >= 1'],
    ['group.extra', { group: { key: (): string => 'k', concurrency: 1, fair: true } }, 'group.fair', 'is not a known option'],
    ['debounce.delay missing', { debounce: { key: (): string => 'k' } }, 'debounce.delay', 'is required'],
    [
      'debounce with idempotencyKey',
      { debounce: { key: (): string => 'k', delay: '5s' }, idempotencyKey: () => 'k' },
      'debounce',
      'cannot be combined with idempotencyKey',
    ],
  ])('refuses %s, naming the class and the option', async (_label, options, option, detail) => {
    class FlowOptions {
      async run(): Promise<void> {}
    }
    Job(options as never)(FlowOptions);
    const err = await Loom.create({ store: new MemoryStore(), jobs: [FlowOptions], logger: quiet }).catch((e: unknown) => e);
    expect(LoomError.is(err, 'INVALID_JOB_OPTIONS')).toBe(true);
    expect((err as Error).message).toContain('@Job on class FlowOptions');
    expect((err as Error).message).toContain(`option "${option}"`);
    expect((err as Error).message).toContain(detail);
  });
});
