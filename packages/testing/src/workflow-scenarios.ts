import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  Job,
  LoomError,
  MAX_PENDING_SIGNALS,
  MAX_STEP_RESULT_BYTES,
  MAX_STEP_RESULTS_TOTAL_BYTES,
  PermanentError,
  type JobContext,
  type JobRecord,
  type JobStore,
  type StepRecord,
} from '@loom/core';
import { crashableStore } from './crashable-store.js';
import { FakeClock } from './fake-clock.js';
import { createTestLoom, type TestLoom } from './test-loom.js';
import { HEAVY_TEST_MS } from './conformance/harness.js';

/** What each workflow scenario runs on: a fresh, uninitialised store per test. */
export interface WorkflowScenarioFixture {
  store: JobStore;
}

/** Side effects the scenario jobs count, and the knobs tests turn. Reset before every test. */
interface Probe {
  effects: Record<string, number>;
  /** Called by `wf-three-step` between step 2 and step 3. */
  beforeShip: (attempt: number) => Promise<void>;
  /** `wf-parent` fails its first attempt after enqueueing its children. */
  failParentOnce: boolean;
  /** `wf-order` reaches its steps in this order. */
  order: string[];
  /** `wf-parallel`'s first step finishes when this resolves. */
  slowGate: Promise<void>;
  /** `wf-square` jobs with `fail: true` fail while this is set. */
  outOfStock: boolean;
}

const freshProbe = (): Probe => ({
  effects: {},
  beforeShip: async () => {},
  failParentOnce: false,
  order: ['a', 'b'],
  slowGate: Promise.resolve(),
  outOfStock: true,
});

/**
 * The durable-workflow behaviour (memoized steps, sleeps, child jobs, signals, determinism and
 * limits) checked end to end through the engine on the store `fixture` returns. Run it once per
 * store; the job classes are defined when it is called, so merely importing it registers nothing.
 */
export function describeWorkflowScenarios(label: string, fixture: () => WorkflowScenarioFixture | Promise<WorkflowScenarioFixture>): void {
  let probe = freshProbe();
  const effect = (name: string): void => {
    probe.effects[name] = (probe.effects[name] ?? 0) + 1;
  };

  @Job({ name: 'wf-three-step' })
  class ThreeStep {
    async run(_: undefined, ctx: JobContext) {
      const reservation = await ctx.step('reserve', () => (effect('reserve'), { reservation: 'r-1' }));
      const charge = await ctx.step('charge', () => (effect('charge'), { chargeId: 'ch-1', amount: 42 }));
      await probe.beforeShip(ctx.attempt);
      const tracking = await ctx.step('ship', () => (effect('ship'), 'track-1'));
      return { reservation, charge, tracking };
    }
  }

  @Job({ name: 'wf-sleeper' })
  class Sleeper {
    async run(payload: { sleep: string }, ctx: JobContext) {
      await ctx.step('before', () => effect('before'));
      await ctx.sleep('cool-off', payload.sleep);
      await ctx.step('after', () => effect('after'));
      return 'woke';
    }
  }

  @Job({ name: 'wf-square', retries: 0 })
  class Square {
    async run(payload: { n: number; fail?: boolean }) {
      effect('square');
      if (payload.fail && probe.outOfStock) throw new PermanentError(`cannot square ${payload.n}: out of stock`);
      return payload.n * payload.n;
    }
  }

  @Job({ name: 'wf-parent', retries: 2, backoff: { type: 'fixed', delay: '1s' } })
  class Parent {
    async run(payload: { n: number; failing?: number }, ctx: JobContext) {
      const ids: string[] = [];
      for (let i = 0; i < payload.n; i++) ids.push((await ctx.enqueue(Square, { n: i, fail: i === payload.failing })).id);
      if (probe.failParentOnce && ctx.attempt === 1) throw new Error('parent crashed after enqueueing');
      const squares = await ctx.waitForJob<number>(ids);
      return squares.reduce((a, b) => a + b, 0);
    }
  }

  /** Fans out to children due a second later: they start together, after it parked. */
  @Job({ name: 'wf-later-parent' })
  class LaterParent {
    async run(payload: { n: number }, ctx: JobContext) {
      const ids: string[] = [];
      for (let i = 0; i < payload.n; i++) ids.push((await ctx.enqueue(Square, { n: i }, { delay: '1s' })).id);
      const squares = await ctx.waitForJob<number>(ids);
      return squares.reduce((a, b) => a + b, 0);
    }
  }

  @Job({ name: 'wf-slow-child', retries: 0 })
  class SlowChild {
    async run(_: undefined, ctx: JobContext) {
      await ctx.sleep('slow', '2h');
      return 'late';
    }
  }

  @Job({ name: 'wf-impatient', retries: 0 })
  class Impatient {
    async run(_: undefined, ctx: JobContext) {
      const { id } = await ctx.enqueue(SlowChild, undefined);
      try {
        return await ctx.waitForJob(id, { timeout: '1h' });
      } catch (err) {
        if (LoomError.is(err, 'WAIT_TIMEOUT')) return 'gave up';
        throw err;
      }
    }
  }

  @Job({ name: 'wf-approval', retries: 0 })
  class Approval {
    async run(payload: { waits: number; timeout?: string }, ctx: JobContext) {
      await ctx.step('prepare', () => effect('prepare'));
      const decisions: unknown[] = [];
      try {
        for (let i = 0; i < payload.waits; i++) {
          decisions.push(await ctx.waitForSignal('approve', payload.timeout ? { timeout: payload.timeout } : {}));
        }
      } catch (err) {
        if (LoomError.is(err, 'WAIT_TIMEOUT')) return { escalated: true, decisions };
        throw err;
      }
      return { decisions };
    }
  }

  @Job({ name: 'wf-order', retries: 1, backoff: { type: 'fixed', delay: '1s' } })
  class Order {
    async run(_: undefined, ctx: JobContext) {
      for (const name of probe.order) await ctx.step(name, () => effect(name));
      if (ctx.attempt === 1) throw new Error('first attempt fails after its steps');
      return 'done';
    }
  }

  @Job({ name: 'wf-parallel', retries: 1, backoff: { type: 'fixed', delay: '1s' } })
  class Parallel {
    async run(_: undefined, ctx: JobContext) {
      // "slow" is called first but finishes last: positions follow calls, not completions.
      const [slow, fast] = await Promise.all([
        ctx.step('slow', async () => {
          await probe.slowGate;
          effect('slow');
          return 1;
        }),
        ctx.step('fast', () => (effect('fast'), 2)),
      ]);
      if (ctx.attempt === 1) throw new Error('first attempt fails after its steps');
      return slow + fast;
    }
  }

  @Job({ name: 'wf-duplicate', retries: 0 })
  class Duplicate {
    async run(_: undefined, ctx: JobContext) {
      await ctx.step('send', () => effect('send'));
      await ctx.step('send', () => effect('send'));
    }
  }

  @Job({ name: 'wf-huge', retries: 0 })
  class Huge {
    async run(_: undefined, ctx: JobContext) {
      await ctx.step('export', () => (effect('export'), 'x'.repeat(MAX_STEP_RESULT_BYTES + 1)));
    }
  }

  @Job({ name: 'wf-hoarder', retries: 0 })
  class Hoarder {
    async run(_: undefined, ctx: JobContext) {
      // Each result is just under the per-step cap; together they reach the per-job total.
      const chunk = 'y'.repeat(MAX_STEP_RESULT_BYTES - 1024);
      try {
        for (let i = 1; i <= Math.ceil(MAX_STEP_RESULTS_TOTAL_BYTES / MAX_STEP_RESULT_BYTES) + 1; i++) {
          await ctx.step(`part-${i}`, () => (effect('part'), chunk));
        }
      } catch (err) {
        // Completing (rather than dying) keeps the test off the slow path of moving an 8 MiB
        // document to the dead letters on the emulator.
        if (LoomError.is(err, 'STEP_RESULT_TOO_LARGE')) return err.message;
        throw err;
      }
      return 'no limit';
    }
  }

  const jobs = [ThreeStep, Sleeper, Square, Parent, LaterParent, SlowChild, Impatient, Approval, Order, Parallel, Duplicate, Huge, Hoarder];

  describe(`durable workflows on ${label}`, () => {
    let store: JobStore;
    const looms: TestLoom[] = [];
    const start = async (options: { store?: JobStore; clock?: FakeClock } = {}): Promise<TestLoom> => {
      const t = await createTestLoom({ jobs, store: options.store ?? store, clock: options.clock ?? new FakeClock(), lease: '30s', pollInterval: '1h' });
      looms.push(t);
      return t;
    };
    const steps = (job: JobRecord | null): Array<Pick<StepRecord, 'name' | 'kind' | 'status'>> =>
      (job?.steps ?? []).map(({ name, kind, status }) => ({ name, kind, status }));
    const lastError = (job: JobRecord | null) => job?.errors.at(-1);

    beforeEach(async () => {
      probe = freshProbe();
      store = (await fixture()).store;
    });
    afterEach(async () => {
      for (const t of looms.splice(0)) await t.stop();
      await store.close();
    });

    it('a workflow that dies after step 2 resumes at step 3 and never repeats steps 1-2', async () => {
      const clock = new FakeClock();
      const doomed = crashableStore(store);
      const first = await start({ store: doomed.store, clock });
      looms.pop(); // never stopped: it died, and its store calls hang like a dead process's
      probe.beforeShip = (attempt) => {
        if (attempt > 1) return Promise.resolve();
        doomed.crash();
        return new Promise(() => {}); // the process is gone mid-run
      };
      const { id } = await first.enqueue(ThreeStep, undefined);
      await first.settle();
      expect(probe.effects).toEqual({ reserve: 1, charge: 1 });
      expect((await store.getJob(id))?.status).toBe('running');

      const second = await start({ clock });
      await second.advance('31s'); // the dead engine's lease runs out; the survivor takes the job over
      const job = await second.getJob(id);
      expect(job?.status).toBe('completed');
      expect(job?.attempt).toBe(2);
      expect(job?.result).toEqual({ reservation: { reservation: 'r-1' }, charge: { chargeId: 'ch-1', amount: 42 }, tracking: 'track-1' });
      expect(probe.effects).toEqual({ reserve: 1, charge: 1, ship: 1 });
      // loom.getJob shows where the workflow went: every step, its kind, status, result and time.
      expect(job?.steps.map(({ name, kind, status, result }) => ({ name, kind, status, result }))).toEqual([
        { name: 'reserve', kind: 'step', status: 'completed', result: { reservation: 'r-1' } },
        { name: 'charge', kind: 'step', status: 'completed', result: { chargeId: 'ch-1', amount: 42 } },
        { name: 'ship', kind: 'step', status: 'completed', result: 'track-1' },
      ]);
      expect(job?.steps.every((s) => s.at instanceof Date)).toBe(true);
    });

    it('sleeps 3 days durably: the job leaves the worker and resumes after the fake clock passes it', async () => {
      const t = await start();
      const sleepStart = t.clock.now().getTime();
      const { id } = await t.enqueue(Sleeper, { sleep: '3d' });
      await t.runUntilIdle();
      let job = await t.getJob(id);
      expect(job?.status).toBe('queued');
      expect(job?.runAt.getTime()).toBe(sleepStart + 3 * 86_400_000);
      expect(job?.attempt).toBe(0); // a sleep gives the attempt back
      expect(steps(job)).toEqual([
        { name: 'before', kind: 'step', status: 'completed' },
        { name: 'cool-off', kind: 'sleep', status: 'pending' },
      ]);
      await t.advance('71h');
      expect(probe.effects).toEqual({ before: 1 });
      await t.advance('1h');
      job = await t.getJob(id);
      expect(job?.status).toBe('completed');
      expect(job?.result).toBe('woke');
      expect(probe.effects).toEqual({ before: 1, after: 1 });
      expect(steps(job)).toEqual([
        { name: 'before', kind: 'step', status: 'completed' },
        { name: 'cool-off', kind: 'sleep', status: 'completed' },
        { name: 'after', kind: 'step', status: 'completed' },
      ]);
    });

    it('a sleep survives an engine restart on the same store', async () => {
      const clock = new FakeClock();
      const first = await start({ clock });
      const { id } = await first.enqueue(Sleeper, { sleep: '1h' });
      await first.runUntilIdle();
      await first.stop();
      const second = await start({ clock });
      await second.advance('59m');
      expect((await second.getJob(id))?.status).toBe('queued');
      await second.advance('1m');
      expect((await second.getJob(id))?.status).toBe('completed');
      expect(probe.effects).toEqual({ before: 1, after: 1 });
    });

    it('fans out to 10 children and fans their results in', async () => {
      const t = await start();
      const { id } = await t.enqueue(Parent, { n: 10 });
      await t.runUntilIdle();
      const parent = await t.getJob(id);
      expect(parent?.status).toBe('completed');
      expect(parent?.result).toBe(285); // 0² + 1² + … + 9²
      const children = await t.store.listJobs({ parentId: id });
      expect(children).toHaveLength(10);
      expect(children.every((c) => c.status === 'completed' && c.parentId === id)).toBe(true);
      const wait = parent?.steps.find((s) => s.kind === 'wait');
      expect(wait).toMatchObject({ name: 'waitForJob#1', status: 'completed', result: [0, 1, 4, 9, 16, 25, 36, 49, 64, 81] });
      expect(parent?.steps.filter((s) => s.kind === 'enqueue').map((s) => s.name)).toEqual(Array.from({ length: 10 }, (_, i) => `enqueue:wf-square#${i + 1}`));
    });

    it(
      'fan-in reads grow linearly with the children: no finishing child reads the parent or lists its siblings',
      async () => {
        // What the engine reads back from the store, in serialized bytes, while a parent fans out to
        // n children and waits for all of them. Each finishing child used to read the parent (whose
        // document grows with n) and list its siblings: n² bytes.
        let bytesRead = 0;
        const measured = new Proxy(store, {
          get(target, prop, receiver) {
            const value = Reflect.get(target, prop, receiver) as unknown;
            if (typeof value !== 'function') return value;
            return (...args: unknown[]) => {
              const result = (value as (...a: unknown[]) => unknown).apply(target, args);
              if (prop !== 'getJob' && prop !== 'listJobs') return result;
              return (result as Promise<unknown>).then((records) => ((bytesRead += JSON.stringify(records ?? null).length), records));
            };
          },
        });
        const t = await start({ store: measured });
        // The children start together once the parent has parked (LaterParent): when they ran while
        // it was still parking, which of its looks found them finished depended on timing, and with
        // it how many times it read them all (one pass or two: a linear 4× could read as 9×).
        const fanIn = async (n: number): Promise<number> => {
          bytesRead = 0;
          const { id } = await t.enqueue(LaterParent, { n });
          await t.runUntilIdle();
          await t.advance('1s');
          await t.runUntilIdle();
          expect((await store.getJob(id))?.result).toBe(((n - 1) * n * (2 * n - 1)) / 6);
          return bytesRead;
        };
        const small = await fanIn(20);
        const large = await fanIn(80);
        // Four times the children: about four times the bytes when linear, sixteen when quadratic.
        expect(large / small).toBeLessThan(6);
      },
      HEAVY_TEST_MS,
    );

    it('children finishing together read their parent a few times, not once each', async () => {
      // 30 children start together after their parent parked, and complete in one batch. Checked at
      // once, each would find no sibling still running and read the parent and every awaited job:
      // 30 reads of the parent, 900 of children.
      const parentReads: string[] = [];
      let parentId: string | undefined;
      const measured = new Proxy(store, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver) as unknown;
          if (typeof value !== 'function') return value;
          if (prop !== 'getJob') return (value as (...a: unknown[]) => unknown).bind(target);
          return (id: string) => {
            if (id === parentId) parentReads.push(id);
            return (value as (id: string) => unknown).call(target, id);
          };
        },
      });
      const t = await start({ store: measured });
      parentId = (await t.enqueue(LaterParent, { n: 30 })).id;
      await t.runUntilIdle();
      expect((await store.getJob(parentId))?.status).toBe('waiting');
      parentReads.length = 0;
      await t.advance('1s');
      await t.runUntilIdle();
      expect((await store.getJob(parentId))?.result).toBe((29 * 30 * 59) / 6);
      expect(parentReads.length).toBeLessThanOrEqual(4);
    });

    it('a retried parent does not enqueue its children again', async () => {
      probe.failParentOnce = true;
      const t = await start();
      const { id } = await t.enqueue(Parent, { n: 3 });
      await t.runUntilIdle();
      expect((await t.getJob(id))?.status).toBe('queued'); // attempt 1 failed after enqueueing
      await t.advance('1s');
      const parent = await t.getJob(id);
      expect(parent?.status).toBe('completed');
      expect(parent?.result).toBe(5);
      expect(await t.store.listJobs({ parentId: id })).toHaveLength(3);
      expect(probe.effects.square).toBe(3);
    });

    it('one dead child fails the parent with CHILD_FAILED naming the child and its error', async () => {
      const t = await start();
      const { id } = await t.enqueue(Parent, { n: 4, failing: 2 });
      await t.advance('10s'); // through the parent's retries
      const parent = await t.getJob(id);
      expect(parent?.status).toBe('dead');
      const error = lastError(parent);
      expect(error?.code).toBe('CHILD_FAILED');
      const letters = await t.loom.deadLetters.list({ name: 'wf-square' });
      expect(letters).toHaveLength(1);
      expect(error?.message).toContain(`child job ${letters[0]!.id} (wf-square) is dead: cannot square 2: out of stock`);
      // Every attempt looked again (an uncaught failure stays open, so replaying the dead child and
      // then the parent can still succeed) and found the child still dead; no child was enqueued twice.
      expect(parent?.errors.map((e) => e.code)).toEqual(['CHILD_FAILED', 'CHILD_FAILED', 'CHILD_FAILED']);
      expect(parent?.steps.find((s) => s.kind === 'wait')).toMatchObject({ status: 'pending', error: { code: 'CHILD_FAILED' } });
      expect(probe.effects.square).toBe(4);
    });

    it('a parent that died of a dead child finishes once an operator replays the child, then the parent', async () => {
      const t = await start();
      const { id } = await t.enqueue(Parent, { n: 3, failing: 1 });
      await t.advance('10s');
      expect((await t.getJob(id))?.status).toBe('dead');
      const [child] = await t.loom.deadLetters.list({ name: 'wf-square' });
      probe.outOfStock = false; // the operator fixed the cause
      await t.loom.deadLetters.retry(child!.id);
      await t.runUntilIdle();
      expect((await t.getJob(child!.id))?.status).toBe('completed');
      await t.loom.deadLetters.retry(id);
      await t.runUntilIdle();
      const parent = await t.getJob(id);
      expect(parent?.status).toBe('completed');
      expect(parent?.result).toBe(5);
      expect(await t.store.listJobs({ parentId: id })).toHaveLength(3); // no child enqueued twice
    });

    it('a wait for a job times out with WAIT_TIMEOUT, which the handler can catch', async () => {
      const t = await start();
      const { id } = await t.enqueue(Impatient, undefined);
      await t.advance('59m');
      expect((await t.getJob(id))?.status).toBe('waiting');
      await t.advance('1m');
      const job = await t.getJob(id);
      expect(job?.status).toBe('completed');
      expect(job?.result).toBe('gave up');
      // The handler caught the timeout and finished: the outcome is final.
      expect(job?.steps.find((s) => s.kind === 'wait')).toMatchObject({ status: 'completed', error: { code: 'WAIT_TIMEOUT' } });
    });

    it('delivers a signal sent before the wait', async () => {
      const t = await start();
      const { id } = await t.enqueue(Approval, { waits: 1 }, { delay: '1m' });
      expect(await t.loom.signal(id, 'approve', { by: 'ann' })).toBe(true);
      await t.advance('1m');
      const job = await t.getJob(id);
      expect(job?.status).toBe('completed');
      expect(job?.result).toEqual({ decisions: [{ by: 'ann' }] });
      expect(job?.signals).toEqual([]);
      expect(job?.steps.find((s) => s.kind === 'signal')).toMatchObject({ name: 'waitForSignal:approve#1', status: 'completed', result: { by: 'ann' } });
    });

    it('delivers a signal sent after the wait began, each signal exactly once', async () => {
      const t = await start();
      const { id } = await t.enqueue(Approval, { waits: 2 });
      await t.runUntilIdle();
      let job = await t.getJob(id);
      expect(job?.status).toBe('waiting');
      expect(job?.waitingFor).toEqual({ signal: 'approve' });
      expect(await t.loom.signal(id, 'approve', 1)).toBe(true);
      await t.runUntilIdle();
      job = await t.getJob(id);
      expect(job?.status).toBe('waiting'); // the second wait does not get the first signal again
      expect(await t.loom.signal(id, 'approve', 2)).toBe(true);
      await t.runUntilIdle();
      job = await t.getJob(id);
      expect(job?.status).toBe('completed');
      expect(job?.result).toEqual({ decisions: [1, 2] });
      expect(probe.effects.prepare).toBe(1);
      expect(await t.loom.signal(id, 'approve', 3)).toBe(false); // finished: nothing stored
    });

    it('a retried loom.signal with an id reaches the run once, also after the run took it; too many pending signals are refused', async () => {
      const t = await start();
      const { id } = await t.enqueue(Approval, { waits: 2, timeout: '1h' });
      await t.runUntilIdle();
      // A webhook delivered twice (the sender retried after a timeout): one signal, one decision.
      expect(await t.loom.signal(id, 'approve', 'yes', { id: 'delivery-1' })).toBe(true);
      expect(await t.loom.signal(id, 'approve', 'yes', { id: 'delivery-1' })).toBe(true);
      await t.runUntilIdle();
      expect((await t.getJob(id))?.status).toBe('waiting'); // the first wait took it; the second still waits
      expect(await t.loom.signal(id, 'approve', 'yes', { id: 'delivery-1' })).toBe(true); // taken already: not stored again
      await t.runUntilIdle();
      let job = await t.getJob(id);
      expect(job?.status).toBe('waiting');
      expect(job?.signals).toEqual([]);
      expect(job?.steps.find((s) => s.kind === 'signal')).toMatchObject({ status: 'completed', result: 'yes', signalId: 'delivery-1' });
      await expect(t.loom.signal(id, 'approve', 'yes', { id: '' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });

      // Signals of a name no run waits for pile up on the job: past MAX_PENDING_SIGNALS they are refused.
      for (let i = 0; i < MAX_PENDING_SIGNALS; i++) expect(await t.loom.signal(id, 'note', i)).toBe(true);
      const refused = await t.loom.signal(id, 'note', 'one too many').catch((err: unknown) => err);
      expect(refused).toMatchObject({ code: 'TOO_MANY_SIGNALS' });
      expect((refused as Error).message).toContain(`${MAX_PENDING_SIGNALS} signals`);
      job = await t.getJob(id);
      expect(job?.signals).toHaveLength(MAX_PENDING_SIGNALS);
      expect(job?.signals.at(-1)).toMatchObject({ name: 'note', data: MAX_PENDING_SIGNALS - 1 });
      await t.advance('1h');
      expect((await t.getJob(id))?.result).toEqual({ escalated: true, decisions: ['yes'] });
    });

    it('refuses signal data that is not plain data and stores nothing', async () => {
      const t = await start();
      const { id } = await t.enqueue(Approval, { waits: 1 });
      await t.runUntilIdle();
      await expect(t.loom.signal(id, 'approve', { at: new URL('https://x.test') })).rejects.toMatchObject({ code: 'NOT_PLAIN_DATA' });
      await expect(t.loom.signal(id, '', 1)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect((await t.getJob(id))?.signals).toEqual([]);
      expect((await t.getJob(id))?.status).toBe('waiting');
    });

    it('a signal wait times out with WAIT_TIMEOUT', async () => {
      const t = await start();
      const { id } = await t.enqueue(Approval, { waits: 1, timeout: '1d' });
      await t.advance('23h');
      expect((await t.getJob(id))?.status).toBe('waiting');
      await t.advance('1h');
      const job = await t.getJob(id);
      expect(job?.result).toEqual({ escalated: true, decisions: [] });
      expect(job?.steps.find((s) => s.kind === 'signal')).toMatchObject({ status: 'completed', error: { code: 'WAIT_TIMEOUT' } });
      // The job finished: a late signal is refused and changes nothing.
      expect(await t.loom.signal(id, 'approve', 'late')).toBe(false);
    });

    it('detects a replay that reaches its steps in another order', async () => {
      const t = await start();
      const { id } = await t.enqueue(Order, undefined);
      await t.runUntilIdle();
      probe.order = ['b', 'a']; // "the code changed" between attempts
      await t.advance('1s');
      const job = await t.getJob(id);
      expect(job?.status).toBe('dead');
      const error = lastError(job);
      expect(error?.code).toBe('NON_DETERMINISM');
      expect(error?.message).toContain('step #1');
      expect(error?.message).toContain('step "a"'); // recorded
      expect(error?.message).toContain('step "b"'); // reached
      expect(probe.effects).toEqual({ a: 1, b: 1 });
    });

    it('keeps call order for parallel steps, so their replay is not mistaken for non-determinism', async () => {
      const t = await start();
      let openGate!: () => void;
      probe.slowGate = new Promise((resolve) => (openGate = resolve));
      const { id } = await t.enqueue(Parallel, undefined);
      await t.settle();
      expect((await t.getJob(id))?.steps.map((s) => [s.name, s.seq])).toEqual([['fast', 1]]);
      openGate();
      await t.runUntilIdle();
      expect((await t.getJob(id))?.steps.map((s) => [s.name, s.seq])).toEqual([
        ['fast', 1],
        ['slow', 0],
      ]);
      await t.advance('1s');
      const job = await t.getJob(id);
      expect(job?.status).toBe('completed');
      expect(job?.result).toBe(3);
      expect(probe.effects).toEqual({ slow: 1, fast: 1 });
    });

    it('refuses a step name used twice in one run, naming it', async () => {
      const t = await start();
      const { id } = await t.enqueue(Duplicate, undefined);
      await t.runUntilIdle();
      const job = await t.getJob(id);
      expect(job?.status).toBe('dead');
      expect(lastError(job)).toMatchObject({ code: 'DUPLICATE_STEP' });
      expect(lastError(job)?.message).toContain('"send"');
      expect(probe.effects.send).toBe(1);
    });

    it('refuses a step result over MAX_STEP_RESULT_BYTES, naming the step, and shows the failed step', async () => {
      const t = await start();
      const { id } = await t.enqueue(Huge, undefined);
      await t.runUntilIdle();
      const job = await t.getJob(id);
      expect(job?.status).toBe('dead');
      expect(lastError(job)?.code).toBe('STEP_RESULT_TOO_LARGE');
      expect(lastError(job)?.message).toContain('step "export"');
      expect(job?.steps).toEqual([
        expect.objectContaining({ name: 'export', status: 'pending', error: expect.objectContaining({ code: 'STEP_RESULT_TOO_LARGE' }) }),
      ]);
    });

    it('stores step results up to MAX_STEP_RESULTS_TOTAL_BYTES per job and refuses the step that would pass it', async () => {
      const t = await start();
      const { id } = await t.enqueue(Hoarder, undefined);
      await t.runUntilIdle();
      const job = await t.getJob(id);
      expect(job?.status).toBe('completed');
      expect(job?.result).toMatch(/step "part-9" is about \d+ bytes serialized; with the \d+ bytes this job's earlier steps hold/);
      expect(job?.steps.filter((s) => s.status === 'completed')).toHaveLength(8);
      expect(job?.steps.at(-1)).toMatchObject({ name: 'part-9', status: 'pending', error: { code: 'STEP_RESULT_TOO_LARGE' } });
    });
  });
}
