import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, MemoryStore, type JobContext, type JobStore } from '@loom/core';
import { testHooks } from '@loom/core/internal';
import { createTestLoom } from '@loom/testing';

const effects: string[] = [];

@Job({ name: 'two-steps', retries: 2, backoff: { type: 'fixed', delay: '1s' } })
class TwoSteps {
  async run(_: undefined, ctx: JobContext): Promise<string> {
    const a = await ctx.step('charge', () => {
      effects.push(`charge on attempt ${ctx.attempt}`);
      return { chargeId: 'ch_1' };
    });
    if (ctx.attempt === 1) throw new Error('mail server down');
    await ctx.step('mail', () => effects.push(`mail ${a.chargeId}`));
    return a.chargeId;
  }
}

@Job({ name: 'repeats-a-step', retries: 0 })
class RepeatsAStep {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    await ctx.step('same', () => 1);
    await ctx.step('same', () => 2);
  }
}

@Job({ name: 'unstorable-step', retries: 0 })
class UnstorableStep {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    await ctx.step('make-map', () => new Map());
  }
}

@Job({ name: 'sleeper', retries: 0 })
class Sleeper {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    await ctx.step('before', () => effects.push(`before (attempt ${ctx.attempt})`));
    await ctx.sleep('cool-off', '1h');
    effects.push('after');
  }
}

@Job({ name: 'sleeps-in-catch', retries: 0 })
class SleepsInCatch {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    try {
      await ctx.sleep('nap', '10m');
    } catch {
      // Swallowing the suspension must not turn the sleep into a completion.
    }
    effects.push('woke');
  }
}

@Job({ name: 'reporter' })
class Reporter {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    await ctx.progress({ done: 3, of: 10 });
    ctx.log.info({ extra: 1 }, 'half way');
  }
}

const ledger: string[] = [];
@Job({ name: 'transactional', retries: 0 })
class Transactional {
  async run(p: { fail: boolean }, ctx: JobContext): Promise<void> {
    await ctx.transaction(async (session) => {
      expect(session).toBeDefined();
      if (p.fail) throw new Error('constraint violated');
      ledger.push('row');
    });
  }
}

/** Would retry any ordinary failure three times. */
@Job({ name: 'needs-transaction', retries: 3 })
class NeedsTransaction {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    await ctx.transaction(async () => {});
  }
}

describe('JobContext', () => {
  it('passes identity to the handler', async () => {
    let seen: Partial<JobContext> = {};
    @Job({ name: 'identity', idempotencyKey: () => 'k-1' })
    class Identity {
      async run(_: undefined, ctx: JobContext): Promise<void> {
        seen = { jobId: ctx.jobId, name: ctx.name, attempt: ctx.attempt, idempotencyKey: ctx.idempotencyKey };
      }
    }
    const t = await createTestLoom({ jobs: [Identity] });
    const { id } = await t.enqueue(Identity);
    await t.runUntilIdle();
    expect(seen).toEqual({ jobId: id, name: 'identity', attempt: 1, idempotencyKey: 'k-1' });
    await t.stop();
  });

  it('memoizes steps across attempts', async () => {
    effects.length = 0;
    const t = await createTestLoom({ jobs: [TwoSteps] });
    const { id } = await t.enqueue(TwoSteps);
    await t.advance('1s');
    const job = await t.getJob(id);
    expect(job).toMatchObject({ status: 'completed', attempt: 2, result: 'ch_1' });
    expect(effects).toEqual(['charge on attempt 1', 'mail ch_1']);
    expect(job?.steps.map((s) => [s.name, s.status])).toEqual([
      ['charge', 'completed'],
      ['mail', 'completed'],
    ]);
    await t.stop();
  });

  it('refuses a step name used twice in one run, naming it', async () => {
    const t = await createTestLoom({ jobs: [RepeatsAStep] });
    const { id } = await t.enqueue(RepeatsAStep);
    await t.runUntilIdle();
    const job = await t.getJob(id);
    expect(job?.status).toBe('dead');
    expect(job?.errors[0]?.code).toBe('DUPLICATE_STEP');
    expect(job?.errors[0]?.message).toMatch(/step name "same" is used twice/);
    await t.stop();
  });

  it('refuses a step result that is not plain data', async () => {
    const t = await createTestLoom({ jobs: [UnstorableStep] });
    const { id } = await t.enqueue(UnstorableStep);
    await t.runUntilIdle();
    expect((await t.getJob(id))?.errors[0]?.message).toMatch(/The result of step "make-map" is not plain data at \(root\): is an instance of Map/);
    await t.stop();
  });

  it('sleeps durably: the job leaves the worker, the attempt is given back, and the next run passes the sleep', async () => {
    effects.length = 0;
    const t = await createTestLoom({ jobs: [Sleeper] });
    const suspended: string[] = [];
    t.loom.on('job:suspended', (e) => suspended.push(e.reason));
    const { id } = await t.enqueue(Sleeper);
    await t.runUntilIdle();
    let job = await t.getJob(id);
    expect(job).toMatchObject({ status: 'queued', attempt: 0 });
    expect(job?.runAt).toEqual(new Date(t.clock.now().getTime() + 3_600_000));
    expect(testHooks(t.loom).inFlight()).toEqual([]);
    expect(suspended).toEqual(['sleep "cool-off"']);
    await t.advance('59m');
    expect(effects).toEqual(['before (attempt 1)']);
    await t.advance('1m');
    job = await t.getJob(id);
    expect(job).toMatchObject({ status: 'completed', attempt: 1 });
    expect(effects).toEqual(['before (attempt 1)', 'after']);
    await t.stop();
  });

  it('a handler cannot swallow a sleep', async () => {
    effects.length = 0;
    const t = await createTestLoom({ jobs: [SleepsInCatch] });
    const { id } = await t.enqueue(SleepsInCatch);
    await t.runUntilIdle();
    expect((await t.getJob(id))?.status).toBe('queued');
    await t.advance('10m');
    expect((await t.getJob(id))?.status).toBe('completed');
    expect(effects).toEqual(['woke', 'woke']);
    await t.stop();
  });

  it('saves progress and logs with the job id', async () => {
    const t = await createTestLoom({ jobs: [Reporter] });
    const { id } = await t.enqueue(Reporter);
    await t.runUntilIdle();
    expect((await t.getJob(id))?.progress).toEqual({ done: 3, of: 10 });
    expect(t.logs.find((e) => e.msg === 'half way')?.fields).toMatchObject({ jobId: id, job: 'reporter', attempt: 1, extra: 1 });
    await t.stop();
  });

  it('emits job:progress with the job and the value', async () => {
    const t = await createTestLoom({ jobs: [Reporter] });
    const seen: Array<{ id: string; name: string; attempt: number; progress: unknown }> = [];
    t.loom.on('job:progress', (e) => seen.push({ id: e.job.id, name: e.job.name, attempt: e.job.attempt, progress: e.progress }));
    const { id } = await t.enqueue(Reporter);
    await t.runUntilIdle();
    expect(seen).toEqual([{ id, name: 'reporter', attempt: 1, progress: { done: 3, of: 10 } }]);
    await t.stop();
  });

  describe('transaction', () => {
    it("commits the handler's writes with the job's completion", async () => {
      ledger.length = 0;
      const t = await createTestLoom({ jobs: [Transactional] });
      const completed: string[] = [];
      t.loom.on('job:completed', (e) => completed.push(e.job.id));
      const { id } = await t.enqueue(Transactional, { fail: false });
      await t.runUntilIdle();
      expect((await t.getJob(id))?.status).toBe('completed');
      expect(ledger).toEqual(['row']);
      expect(completed).toEqual([id]);
      await t.stop();
    });

    it('leaves the job uncompleted when the transaction fails', async () => {
      const t = await createTestLoom({ jobs: [Transactional] });
      const { id } = await t.enqueue(Transactional, { fail: true });
      await t.runUntilIdle();
      const job = await t.getJob(id);
      expect(job?.status).toBe('dead');
      expect(job?.errors[0]?.message).toBe('constraint violated');
      await t.stop();
    });

    it('fails clearly and permanently on a store without transactions: dead after one attempt, no retries', async () => {
      const store = new MemoryStore();
      const noTx = new Proxy(store, {
        get: (target, prop) => {
          const value = Reflect.get(target, prop, target) as unknown;
          if (prop === 'withTransaction') return undefined;
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        },
      }) as JobStore;
      const t = await createTestLoom({ jobs: [NeedsTransaction], store: noTx });
      const { id } = await t.enqueue(NeedsTransaction);
      await t.runUntilIdle();
      const job = await t.getJob(id);
      expect(job).toMatchObject({ status: 'dead', attempt: 1 });
      expect(job?.errors).toHaveLength(1);
      expect(job?.errors[0]?.code).toBe('TRANSACTIONS_UNSUPPORTED');
      expect(job?.errors[0]?.message).toMatch(/ctx.transaction needs a store with transactions/);
      await t.stop();
    });
  });
});
