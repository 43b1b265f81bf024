/// <reference types="jest" />
import 'reflect-metadata';
import { z } from 'zod';
import { endedJobReason, Job, LoomError, type JobContext, type JobStore, type WaitToken } from '@loom/core';
import { crashableStore } from './crashable-store.js';
import { FakeClock } from './fake-clock.js';
import { createTestLoom, type TestLoom } from './test-loom.js';

/** The output a reviewer sends: the schema the scenario's tokens are checked against. */
const Approval = z.object({ approved: z.boolean(), by: z.string() });
type Approval = z.infer<typeof Approval>;

interface Probe {
  tokens: Record<string, WaitToken<Approval>>;
  /** How many times each run went past its wait. */
  resumed: Record<string, number>;
  /** Called right after the wait returned, before the step after it. */
  afterWait: (attempt: number) => Promise<void>;
}

/**
 * Wait tokens end to end on any store (`ctx.createWaitToken`, `ctx.waitForToken`, `loom.tokens`):
 * the run parks without holding a worker, a completion resumes it with the output, a rejection or
 * a timeout ends the wait with a typed error or the default, and a token completed while the worker
 * is dead resumes the run once.
 */
export function describeWaitTokenScenarios(label: string, fixture: () => { store: JobStore } | Promise<{ store: JobStore }>): void {
  let probe: Probe;

  @Job({ name: 'wt-review', retries: 2 })
  class Review {
    async run(payload: { key: string; timeout?: string; fallback?: boolean }, ctx: JobContext): Promise<unknown> {
      const token = await ctx.step('approval-token', () =>
        ctx.createWaitToken({
          schema: Approval,
          ...(payload.timeout === undefined ? {} : { timeout: payload.timeout }),
          ...(payload.fallback ? { default: { approved: false, by: 'nobody' } } : {}),
        }),
      );
      probe.tokens[payload.key] = token;
      let decision: Approval | string;
      try {
        decision = await ctx.waitForToken(token);
      } catch (err) {
        if (LoomError.is(err, 'TOKEN_REJECTED') || LoomError.is(err, 'TOKEN_TIMEOUT')) decision = err.code;
        else throw err;
      }
      await probe.afterWait(ctx.attempt);
      await ctx.step('after', () => {
        probe.resumed[payload.key] = (probe.resumed[payload.key] ?? 0) + 1;
      });
      return decision;
    }
  }

  /** Makes a token and never waits for it: the run returns, or fails for good, with the token pending. */
  @Job({ name: 'wt-walk-away', retries: 0 })
  class WalkAway {
    async run(payload: { key: string; fail: boolean }, ctx: JobContext): Promise<string> {
      probe.tokens[payload.key] = await ctx.step('approval-token', () => ctx.createWaitToken({ schema: Approval }));
      if (payload.fail) throw new Error('gave up before asking');
      return 'did not ask';
    }
  }

  describe(`wait tokens on ${label}`, () => {
    let store: JobStore;
    const looms: TestLoom[] = [];
    const start = async (options: { store?: JobStore; clock?: FakeClock } = {}): Promise<TestLoom> => {
      const t = await createTestLoom({
        jobs: [Review, WalkAway],
        store: options.store ?? store,
        clock: options.clock ?? new FakeClock(),
        lease: '30s',
        pollInterval: '1h',
      });
      looms.push(t);
      return t;
    };

    beforeEach(async () => {
      probe = { tokens: {}, resumed: {}, afterWait: async () => {} };
      store = (await fixture()).store;
    });
    afterEach(async () => {
      for (const t of looms.splice(0)) await t.stop();
      await store.close();
    });

    it('the run waits without a worker; a completion resumes it with the output; a second one is a no-op that says so', async () => {
      const t = await start();
      const { id } = await t.enqueue(Review, { key: 'a' });
      await t.runUntilIdle();
      const token = probe.tokens.a!;
      expect(token.id).toMatch(/^wt_[A-Za-z0-9_-]{22}$/);
      expect(token.url).toBeUndefined();
      expect(await t.getJob(id)).toMatchObject({ status: 'waiting', attempt: 0 });
      expect((await t.stats()).inFlight).toBe(0);

      expect(await t.tokens.complete(token.id, { approved: true, by: 'ana' })).toEqual({ completed: true, status: 'completed' });
      await t.runUntilIdle();
      expect(await t.getJob(id)).toMatchObject({ status: 'completed', result: { approved: true, by: 'ana' } });
      expect(probe.resumed).toEqual({ a: 1 });

      expect(await t.tokens.complete(token.id, { approved: false, by: 'bob' })).toEqual({ completed: false, status: 'completed' });
      expect(await t.tokens.reject(token.id, 'too late')).toEqual({ completed: false, status: 'completed' });
      await t.runUntilIdle();
      expect(probe.resumed).toEqual({ a: 1 });
      expect(await t.tokens.get(token.id)).toMatchObject({ status: 'completed', output: { approved: true, by: 'ana' }, jobId: id });
    });

    it('an output that does not match the schema is refused and changes nothing', async () => {
      const t = await start();
      const { id } = await t.enqueue(Review, { key: 'a' });
      await t.runUntilIdle();
      const token = probe.tokens.a!;
      await expect(t.tokens.complete(token.id, { approved: 'yes', by: 'ana' })).rejects.toMatchObject({ code: 'INVALID_TOKEN_OUTPUT' });
      await expect(t.tokens.complete(token.id, { approved: true })).rejects.toMatchObject({ code: 'INVALID_TOKEN_OUTPUT', path: 'by' });
      await expect(t.tokens.complete(token.id, { approved: true, by: 'ana', at: new Map() })).rejects.toMatchObject({ code: 'INVALID_TOKEN_OUTPUT' });
      await expect(t.tokens.complete('wt_unknown', { approved: true, by: 'ana' })).rejects.toMatchObject({ code: 'WAIT_TOKEN_NOT_FOUND' });
      expect(await t.tokens.get(token.id)).toMatchObject({ status: 'pending' });
      expect(await t.getJob(id)).toMatchObject({ status: 'waiting' });
    });

    it('a rejection ends the wait with TokenRejectedError', async () => {
      const t = await start();
      const { id } = await t.enqueue(Review, { key: 'a' });
      await t.runUntilIdle();
      expect(await t.tokens.reject(probe.tokens.a!.id, 'over budget')).toEqual({ completed: true, status: 'rejected' });
      await t.runUntilIdle();
      expect(await t.getJob(id)).toMatchObject({ status: 'completed', result: 'TOKEN_REJECTED' });
      expect((await t.getJob(id))?.steps.find((s) => s.name === 'waitForToken#1')).toMatchObject({
        kind: 'signal',
        status: 'completed',
        result: { status: 'rejected', reason: 'over budget' },
      });
    });

    it('a timeout ends the wait with TokenTimeoutError, or the default; a completion after it is a no-op', async () => {
      const t = await start();
      const bare = await t.enqueue(Review, { key: 'bare', timeout: '3d' });
      const withDefault = await t.enqueue(Review, { key: 'fallback', timeout: '3d', fallback: true });
      await t.runUntilIdle();
      expect(probe.tokens.bare!.timeoutAt).toBe(new Date(t.clock.now().getTime() + 3 * 86_400_000).toISOString());
      await t.advance('2d');
      expect(await t.getJob(bare.id)).toMatchObject({ status: 'waiting' });
      await t.advance('1d');
      expect(await t.getJob(bare.id)).toMatchObject({ status: 'completed', result: 'TOKEN_TIMEOUT' });
      expect(await t.getJob(withDefault.id)).toMatchObject({ status: 'completed', result: { approved: false, by: 'nobody' } });
      expect(await t.tokens.complete(probe.tokens.bare!.id, { approved: true, by: 'ana' })).toEqual({ completed: false, status: 'timed-out' });
      expect(probe.resumed).toEqual({ bare: 1, fallback: 1 });
    });

    it('cancelling a job that waits for a token ends the token: completing it then resumes nothing and says why', async () => {
      const t = await start();
      const { id } = await t.enqueue(Review, { key: 'a' });
      await t.runUntilIdle();
      const token = probe.tokens.a!;
      expect(await t.jobs.cancel(id)).toEqual({ cancelled: true, status: 'cancelled' });
      const reason = endedJobReason(id, 'cancelled');
      expect(await t.tokens.get(token.id)).toMatchObject({ status: 'cancelled', reason });
      expect(await t.tokens.complete(token.id, { approved: true, by: 'ana' })).toEqual({ completed: false, status: 'cancelled', reason });
      expect(await t.tokens.reject(token.id, 'no')).toEqual({ completed: false, status: 'cancelled', reason });
      await t.runUntilIdle();
      expect(await t.getJob(id)).toMatchObject({ status: 'cancelled', signals: [] });
      expect(probe.resumed).toEqual({});

      // Retried, the run finds its token cancelled: the wait says so instead of hanging.
      expect(await t.jobs.retry(id)).toEqual({ retried: true, status: 'queued' });
      await t.runUntilIdle();
      await t.advance('1h');
      const retried = await t.getJob(id);
      expect(retried?.errors.at(-1)).toMatchObject({ code: 'TOKEN_CANCELLED' });
      expect(probe.resumed).toEqual({});
    });

    it('a job that completes or dies with a pending token ends it', async () => {
      const t = await start();
      const done = await t.enqueue(WalkAway, { key: 'done', fail: false });
      const dead = await t.enqueue(WalkAway, { key: 'dead', fail: true });
      await t.runUntilIdle();
      expect(await t.getJob(done.id)).toMatchObject({ status: 'completed' });
      expect(await t.getJob(dead.id)).toMatchObject({ status: 'dead' });
      expect(await t.tokens.get(probe.tokens.done!.id)).toMatchObject({ status: 'cancelled', reason: endedJobReason(done.id, 'completed') });
      expect(await t.tokens.list(dead.id)).toMatchObject([{ id: probe.tokens.dead!.id, status: 'cancelled', reason: endedJobReason(dead.id, 'dead') }]);
      expect(await t.tokens.complete(probe.tokens.dead!.id, { approved: true, by: 'ana' })).toMatchObject({ completed: false, status: 'cancelled' });
    });

    it('a token completed as its worker dies resumes the run once, on the engine that took it over', async () => {
      const clock = new FakeClock();
      const doomed = crashableStore(store);
      const first = await start({ store: doomed.store, clock });
      looms.pop(); // never stopped: it died, and its store calls hang like a dead process's
      let dying = true;
      probe.afterWait = () => {
        if (!dying) return Promise.resolve();
        dying = false;
        doomed.crash();
        return new Promise(() => {}); // the process dies right after the wait returned
      };
      const { id } = await first.enqueue(Review, { key: 'a' });
      await first.runUntilIdle();
      expect(await store.getJob(id)).toMatchObject({ status: 'waiting' });

      // Completed; the engine's worker takes the job at once and dies in the middle of the run.
      expect(await first.tokens.complete(probe.tokens.a!.id, { approved: true, by: 'ana' })).toEqual({ completed: true, status: 'completed' });
      await first.settle();
      expect(doomed.crashed).toBe(true);
      expect(await store.getJob(id)).toMatchObject({ status: 'running', attempt: 1 });

      const second = await start({ clock });
      // A retried completion while the worker is dead changes nothing.
      expect(await second.tokens.complete(probe.tokens.a!.id, { approved: true, by: 'ana' })).toEqual({ completed: false, status: 'completed' });
      await second.advance('31s'); // the dead engine's lease runs out; the survivor takes the run over
      const job = await store.getJob(id);
      expect(job).toMatchObject({ status: 'completed', attempt: 2, result: { approved: true, by: 'ana' }, signals: [] });
      expect(probe.resumed).toEqual({ a: 1 });
      expect(job?.steps.map((s) => s.name)).toEqual(['approval-token', 'waitForToken#1', 'after']);
    });
  });
}
