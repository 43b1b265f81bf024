import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Job, type JobContext, type JobStore } from '@loom/core';
import { createTestLoom, type TestLoom } from './test-loom.js';

/** The retention of completed jobs the retention scenarios assume: 7 days, MongoStore's default. */
export const SCENARIO_RETENTION_DAYS = 7;

/**
 * The engines' poll interval. `advance` steps through every due timer and job, and each step is a
 * claim and a listing on the store; polling once a day keeps the days the scenarios move through
 * at a few steps each (hourly polls made ~200 round trips a test, over jest's 30 s on a loaded
 * machine with MongoStore). Waking a sleeping job does not wait for a poll: `advance` stops at its
 * due time.
 */
const POLL = '1d';

/** What each retention scenario runs on: a fresh, uninitialised store per test. */
export interface RetentionScenarioFixture {
  store: JobStore;
  /**
   * Removes what the store's retention of completed jobs ({@link SCENARIO_RETENTION_DAYS} days)
   * would remove at `now`: a MemoryStore configured with it sweeps on its next operation; a
   * MongoStore test deletes what its TTL indexes would (completed, `finishedAt` older than that;
   * wait tokens whose `settledAt` is older than that).
   */
  expireCompleted(now: Date): Promise<void>;
}

/**
 * Workflows against retention, end to end through the engine on the store `fixture` returns: a
 * finished child must stay readable for a parent that waits for it after the retention period.
 */
export function describeRetentionScenarios(label: string, fixture: () => RetentionScenarioFixture | Promise<RetentionScenarioFixture>): void {
  @Job({ name: 'rt-leaf', retries: 0 })
  class Leaf {
    async run(payload: { n: number }) {
      return payload.n * 10;
    }
  }

  @Job({ name: 'rt-slow-parent', retries: 0 })
  class SlowParent {
    async run(payload: { sleep: string; fail?: boolean }, ctx: JobContext) {
      const { id } = await ctx.enqueue(Leaf, { n: 4 });
      await ctx.sleep('think it over', payload.sleep);
      if (payload.fail) throw new Error('changed its mind');
      return ctx.waitForJob<number>(id);
    }
  }

  @Job({ name: 'rt-approval', retries: 0 })
  class Approval {
    async run(payload: { walkAway?: boolean }, ctx: JobContext) {
      const token = await ctx.step('token', () => ctx.createWaitToken());
      if (payload.walkAway) return 'left it pending';
      return ctx.waitForToken(token);
    }
  }

  describe(`retention of finished work on ${label}`, () => {
    let current: RetentionScenarioFixture;
    let t: TestLoom | undefined;

    beforeEach(async () => {
      current = await fixture();
    });
    afterEach(async () => {
      await t?.stop();
      t = undefined;
      await current.store.close();
    });

    it('a parent that sleeps past the retention period still reads its finished child; the child goes once the parent finished', async () => {
      t = await createTestLoom({ jobs: [Leaf, SlowParent], store: current.store, lease: '30s', pollInterval: POLL });
      const { id } = await t.enqueue(SlowParent, { sleep: `${SCENARIO_RETENTION_DAYS + 1}d` });
      await t.runUntilIdle();
      const [child] = await t.store.listJobs({ parentId: id });
      expect(child).toMatchObject({ status: 'completed', result: 40 });
      const finishedAt = child.finishedAt!;

      // Past the child's retention, the parent still asleep: the child stays, as it was.
      await t.advance(`${SCENARIO_RETENTION_DAYS}d`);
      await t.advance('1h');
      await current.expireCompleted(t.clock.now());
      expect(await t.getJob(child.id)).toMatchObject({ status: 'completed', result: 40, finishedAt });
      const listed = await current.store.listJobPage({ statuses: ['completed'], name: 'rt-leaf', limit: 10 });
      expect(listed).toMatchObject([{ id: child.id, finishedAt }]);

      await t.advance('1d');
      const parent = await t.getJob(id);
      expect(parent).toMatchObject({ status: 'completed', result: 40 });
      expect(parent?.errors).toEqual([]);

      // The parent is done with it: retention takes the child, counted from its own finish.
      await current.expireCompleted(t.clock.now());
      expect(await t.getJob(child.id)).toBeNull();
    });

    it("a completed job's wait tokens go with it: settled or left pending, none stays for good", async () => {
      t = await createTestLoom({ jobs: [Approval], store: current.store, lease: '30s', pollInterval: POLL });
      const waited = await t.enqueue(Approval, {});
      const walkedAway = await t.enqueue(Approval, { walkAway: true });
      await t.runUntilIdle();
      const [token] = await t.tokens.list(waited.id);
      const [left] = await t.tokens.list(walkedAway.id);
      expect(await t.tokens.complete(token!.id, 'yes')).toEqual({ completed: true, status: 'completed' });
      await t.runUntilIdle();
      expect(await t.getJob(waited.id)).toMatchObject({ status: 'completed', result: 'yes' });
      expect(await t.tokens.get(left!.id)).toMatchObject({ status: 'cancelled' });

      // Within the retention period a second completion still says what happened.
      await t.advance(`${SCENARIO_RETENTION_DAYS - 1}d`);
      await current.expireCompleted(t.clock.now());
      expect(await t.tokens.complete(token!.id, 'no')).toEqual({ completed: false, status: 'completed' });

      await t.advance('1d');
      await t.advance('1h');
      await current.expireCompleted(t.clock.now());
      expect(await t.getJob(waited.id)).toBeNull();
      expect(await t.getJob(walkedAway.id)).toBeNull();
      expect(await t.tokens.get(token!.id)).toBeNull();
      expect(await t.tokens.get(left!.id)).toBeNull();
    });

    /** A SlowParent asleep past its finished child's retention; the child kept for it. */
    async function parentAsleepPastRetention(payload: { sleep: string; fail?: boolean }): Promise<{ parentId: string; childId: string }> {
      t = await createTestLoom({ jobs: [Leaf, SlowParent], store: current.store, lease: '30s', pollInterval: POLL });
      const { id: parentId } = await t.enqueue(SlowParent, payload);
      await t.runUntilIdle();
      const [child] = await t.store.listJobs({ parentId });
      expect(child).toMatchObject({ status: 'completed' });
      await t.advance(`${SCENARIO_RETENTION_DAYS}d`);
      await t.advance('1h');
      await current.expireCompleted(t.clock.now());
      expect(await t.getJob(child.id)).toMatchObject({ status: 'completed' });
      return { parentId, childId: child.id };
    }

    it('a completed dependency stays past the retention period until its dependents are settled, then goes', async () => {
      const { store } = current;
      await store.init();
      const day0 = new Date('2026-01-01T00:00:00Z');
      const job = { queue: 'default', payload: {}, priority: 0, runAt: day0, maxAttempts: 1 };
      const [{ id }] = await store.enqueue([{ ...job, name: 'rt-dependency' }], { now: day0 });
      const [{ id: dependent }] = await store.enqueue([{ ...job, name: 'rt-dependent', dependsOn: [id] }], { now: day0 });
      const [claimed] = await store.claim({
        owner: 'w',
        queues: ['default'],
        names: ['rt-dependency'],
        limit: 1,
        leaseUntil: new Date(day0.getTime() + 30_000),
        now: day0,
      });
      await store.complete({ jobId: id, token: claimed!.lease!.token }, { now: day0 });
      const later = new Date(day0.getTime() + (SCENARIO_RETENTION_DAYS + 1) * 86_400_000);
      await current.expireCompleted(later);
      expect((await store.getJob(id))?.status).toBe('completed');
      expect(await store.settleDependents({ now: later })).toBe(1);
      expect((await store.getJob(dependent))?.status).toBe('queued');
      await current.expireCompleted(later);
      expect(await store.getJob(id)).toBeNull();
    });

    it('a parent that dies no longer keeps its finished children from retention', async () => {
      const { parentId, childId } = await parentAsleepPastRetention({ sleep: `${SCENARIO_RETENTION_DAYS + 1}d`, fail: true });
      await t!.advance('1d');
      expect(await t!.getJob(parentId)).toMatchObject({ status: 'dead' });
      await current.expireCompleted(t!.clock.now());
      expect(await t!.getJob(childId)).toBeNull();
    });

    it('a parent cancelled while asleep no longer keeps its finished children from retention', async () => {
      const { parentId, childId } = await parentAsleepPastRetention({ sleep: `${SCENARIO_RETENTION_DAYS + 1}d` });
      expect(await t!.jobs.cancel(parentId)).toEqual({ cancelled: true, status: 'cancelled' });
      await current.expireCompleted(t!.clock.now());
      expect(await t!.getJob(childId)).toBeNull();
    });
  });
}
