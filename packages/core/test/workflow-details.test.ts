import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, JOB_WAIT_RECHECK_MS, LoomError, MemoryStore, PermanentError, type JobContext, type JobStore, type StepRecord } from '@loom/core';
import { createTestLoom } from '@loom/testing';
import { StepLog } from '../src/workflow/step-log.js';

// Store-independent details of workflows; the end-to-end scenarios run on both stores from
// packages/testing/src/workflow-scenarios.ts.

let flakyStepCalls = 0;
@Job({ name: 'flaky-step', retries: 1, backoff: { type: 'fixed', delay: '1s' } })
class FlakyStep {
  async run(_: undefined, ctx: JobContext) {
    return ctx.step('call-api', () => {
      flakyStepCalls++;
      if (flakyStepCalls === 1) throw new Error('api returned 503');
      return 'ok';
    });
  }
}

@Job({ name: 'invoice', retries: 0, idempotencyKey: (p: { orderId: string }) => `invoice:${p.orderId}` })
class Invoice {
  async run(payload: { orderId: string }) {
    return `invoice for ${payload.orderId}`;
  }
}

@Job({ name: 'leaf', retries: 0 })
class Leaf {
  async run(payload: { n: number }) {
    return payload.n;
  }
}

@Job({ name: 'unregistered-child' })
class UnregisteredChild {
  async run() {}
}

@Job({ name: 'one-child', retries: 1, backoff: { type: 'fixed', delay: '1s' } })
class OneChild {
  async run(payload: { invoice?: string }, ctx: JobContext) {
    const { id } = payload.invoice ? await ctx.enqueue(Invoice, { orderId: payload.invoice }) : await ctx.enqueue(Leaf, { n: 7 }, { step: 'spawn-leaf' });
    return ctx.waitForJob(id);
  }
}

let misuse: (ctx: JobContext) => Promise<unknown> = async () => undefined;
@Job({ name: 'misuse', retries: 0 })
class Misuse {
  async run(_: undefined, ctx: JobContext) {
    return misuse(ctx);
  }
}

@Job({ name: 'awaits-go', retries: 0 })
class AwaitsGo {
  async run(_: undefined, ctx: JobContext) {
    return ctx.waitForSignal('go');
  }
}

/** Lives in a queue the engine under test does not serve: the test plays the worker that runs it. */
@Job({ name: 'remote-leaf', queue: 'remote', retries: 0 })
class RemoteLeaf {
  async run() {}
}

@Job({ name: 'awaits-remote', retries: 0 })
class AwaitsRemote {
  async run(_: undefined, ctx: JobContext) {
    const { id } = await ctx.enqueue(RemoteLeaf, undefined);
    return ctx.waitForJob(id);
  }
}

@Job({ name: 'napper', retries: 0 })
class Napper {
  async run(_: undefined, ctx: JobContext) {
    await ctx.sleep('nap', '1h');
  }
}

@Job({ name: 'doomed', retries: 0 })
class Doomed {
  async run() {
    throw new PermanentError('address does not exist');
  }
}

@Job({ name: 'waits-for-both', retries: 0 })
class WaitsForBoth {
  async run(_: undefined, ctx: JobContext) {
    const slow = await ctx.enqueue(Napper, undefined);
    const doomed = await ctx.enqueue(Doomed, undefined);
    return ctx.waitForJob([slow.id, doomed.id]);
  }
}

let notifyFailures = 0;
@Job({ name: 'escalates', retries: 1, backoff: { type: 'fixed', delay: '1h' } })
class Escalates {
  async run(_: undefined, ctx: JobContext) {
    let path: string;
    try {
      await ctx.waitForSignal('approve', { timeout: '1h' });
      path = await ctx.step('ship', () => 'shipped');
    } catch (err) {
      if (!LoomError.is(err, 'WAIT_TIMEOUT')) throw err;
      path = await ctx.step('escalate', () => 'escalated');
    }
    await ctx.step('notify', () => {
      if (notifyFailures-- > 0) throw new Error('mail server down');
    });
    return path;
  }
}

const jobs = [Escalates, FlakyStep, Invoice, Leaf, OneChild, Misuse, AwaitsGo, RemoteLeaf, AwaitsRemote, Napper, Doomed, WaitsForBoth];

/** A MemoryStore that runs `beforeFirstWait` just before the first `wait` reaches it. */
function raceBeforeWait(beforeFirstWait: (inner: MemoryStore, args: Parameters<JobStore['wait']>) => Promise<void>): JobStore {
  const inner = new MemoryStore();
  let waits = 0;
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== 'wait' || typeof value !== 'function') return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      return async (...args: Parameters<JobStore['wait']>) => {
        if (waits++ === 0) await beforeFirstWait(inner, args);
        return inner.wait(...args);
      };
    },
  });
}

/** A MemoryStore whose first `recordStep` of the given kind fails, as if the process died right before it. */
function failFirstRecord(kind: StepRecord['kind']): JobStore {
  const inner = new MemoryStore();
  let failed = false;
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== 'recordStep' || typeof value !== 'function')
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      return async (...args: Parameters<JobStore['recordStep']>) => {
        if (!failed && args[1].kind === kind) {
          failed = true;
          throw new LoomError('STORE_ERROR', 'connection reset while recording the step');
        }
        return inner.recordStep(...args);
      };
    },
  });
}

describe('workflow details', () => {
  it('does not lose a signal that arrives while the run is parking to wait for it', async () => {
    // The signal lands after the run looked for it and before it parks: the store says 'signal-pending'.
    const racy = raceBeforeWait(async (inner, [lease, req]) => {
      await inner.signal(lease.jobId, { name: 'go', data: 'racing', now: req.now });
    });
    const t = await createTestLoom({ jobs, store: racy });
    const { id } = await t.enqueue(AwaitsGo, undefined);
    await t.runUntilIdle();
    const job = await t.getJob(id);
    expect(job?.status).toBe('completed');
    expect(job?.result).toBe('racing');
    expect(job?.attempt).toBe(1); // parking gave the attempt back
    await t.stop();
  });

  it('wakes a parent whose child finished while the parent was parking to wait for it', async () => {
    // Another worker completes the child after the parent read it as unfinished and before it
    // parks: the child's wake found the parent still running, so parking must notice by itself.
    const racy = raceBeforeWait(async (inner, [, req]) => {
      const now = req.now;
      const [child] = await inner.claim({
        owner: 'remote-worker',
        queues: ['remote'],
        names: ['remote-leaf'],
        limit: 1,
        leaseUntil: new Date(now.getTime() + 30_000),
        now,
      });
      await inner.complete({ jobId: child!.id, token: child!.lease!.token }, { result: 'done remotely', now });
    });
    const t = await createTestLoom({ jobs, store: racy, queues: ['default'] });
    const { id } = await t.enqueue(AwaitsRemote, undefined);
    await t.runUntilIdle();
    const job = await t.getJob(id);
    expect(job?.status).toBe('completed');
    expect(job?.result).toBe('done remotely');
    await t.stop();
  });

  it('fails the parent as soon as one awaited child dies, without waiting for the others', async () => {
    const t = await createTestLoom({ jobs });
    const { id } = await t.enqueue(WaitsForBoth, undefined);
    await t.runUntilIdle();
    const parent = await t.getJob(id);
    expect(parent?.status).toBe('dead');
    expect(parent?.errors.at(-1)?.message).toMatch(/child job \S+ \(doomed\) is dead: address does not exist/);
    const [napper] = await t.store.listJobs({ parentId: id, name: 'napper' });
    expect(napper?.status).toBe('queued'); // still asleep
    await t.stop();
  });

  it('keeps the path a handler took after catching a timeout, even when the signal arrives before the retry', async () => {
    notifyFailures = 1;
    const t = await createTestLoom({ jobs });
    const { id } = await t.enqueue(Escalates, undefined);
    await t.advance('1h'); // times out, escalates, then "notify" fails: retry in 1 h
    let job = await t.getJob(id);
    expect(job?.status).toBe('queued');
    expect(job?.steps.find((s) => s.kind === 'signal')).toMatchObject({ status: 'completed', error: { code: 'WAIT_TIMEOUT' } });
    expect(await t.loom.signal(id, 'approve', 'late')).toBe(true);
    await t.advance('1h');
    job = await t.getJob(id);
    expect(job?.status).toBe('completed');
    expect(job?.result).toBe('escalated');
    expect(job?.signals).toEqual([expect.objectContaining({ name: 'approve', data: 'late' })]); // never consumed
    await t.stop();
  });

  it('shows a failed step with its error on the job, then its result once a retry succeeds', async () => {
    flakyStepCalls = 0;
    const t = await createTestLoom({ jobs });
    const { id } = await t.enqueue(FlakyStep, undefined);
    await t.runUntilIdle();
    let job = await t.getJob(id);
    expect(job?.steps).toEqual([
      expect.objectContaining({
        name: 'call-api',
        kind: 'step',
        status: 'pending',
        error: expect.objectContaining({ message: 'api returned 503', attempt: 1 }),
      }),
    ]);
    await t.advance('1s');
    job = await t.getJob(id);
    expect(job?.status).toBe('completed');
    expect(job?.steps).toEqual([expect.objectContaining({ name: 'call-api', status: 'completed', result: 'ok' })]);
    expect(job?.steps[0]?.error).toBeUndefined();
    await t.stop();
  });

  it('finds the same child again when the parent died between enqueueing it and recording the step', async () => {
    const t = await createTestLoom({ jobs, store: failFirstRecord('enqueue') });
    const { id } = await t.enqueue(OneChild, {});
    await t.runUntilIdle();
    expect((await t.getJob(id))?.errors.map((e) => e.code)).toEqual(['STORE_ERROR']);
    await t.advance('1s');
    const parent = await t.getJob(id);
    expect(parent?.status).toBe('completed');
    expect(parent?.result).toBe(7);
    const children = await t.store.listJobs({ parentId: id });
    expect(children).toHaveLength(1);
    expect(children[0]?.idempotencyKey).toBe(`child:${id}:spawn-leaf`);
    expect(parent?.steps.find((s) => s.kind === 'enqueue')).toMatchObject({ name: 'spawn-leaf', result: { id: children[0]!.id, deduplicated: true } });
    await t.stop();
  });

  it("respects the child job's own idempotency key, and waits for a job that is not its child by re-checking", async () => {
    const t = await createTestLoom({ jobs });
    const existing = await t.enqueue(Invoice, { orderId: 'o-1' }, { delay: '7m' });
    const { id } = await t.enqueue(OneChild, { invoice: 'o-1' });
    await t.runUntilIdle();
    const parent = await t.getJob(id);
    expect(parent?.steps.find((s) => s.kind === 'enqueue')?.result).toEqual({ id: existing.id, deduplicated: true });
    expect(parent?.status).toBe('waiting');
    await t.advance('7m'); // the invoice runs, but it has no parent to wake
    expect((await t.getJob(existing.id))?.status).toBe('completed');
    expect((await t.getJob(id))?.status).toBe('waiting');
    await t.advance(JOB_WAIT_RECHECK_MS * 2 - 7 * 60_000);
    expect((await t.getJob(id))?.result).toBe('invoice for o-1');
    await t.stop();
  });

  it('looks again 30 s after its wait began, then after as long again as it waited: a lost wake costs about 30 s, not 5 minutes', async () => {
    const t = await createTestLoom({ jobs });
    const early = await t.enqueue(Invoice, { orderId: 'o-2' }, { delay: '10s' });
    const { id } = await t.enqueue(OneChild, { invoice: 'o-2' });
    await t.runUntilIdle();
    expect((await t.getJob(id))?.status).toBe('waiting');
    await t.advance('10s'); // the invoice runs; it is not the parent's child, so nothing wakes the parent
    expect((await t.getJob(early.id))?.status).toBe('completed');
    expect((await t.getJob(id))?.status).toBe('waiting');
    await t.advance('20s');
    expect((await t.getJob(id))?.result).toBe('invoice for o-2');

    const late = await t.enqueue(Invoice, { orderId: 'o-3' }, { delay: '100s' });
    const second = await t.enqueue(OneChild, { invoice: 'o-3' });
    await t.runUntilIdle();
    await t.advance('100s'); // looks at 30 s and 60 s found it unfinished; the next is at 120 s
    expect((await t.getJob(late.id))?.status).toBe('completed');
    expect((await t.getJob(second.id))?.status).toBe('waiting');
    await t.advance('20s');
    expect((await t.getJob(second.id))?.result).toBe('invoice for o-3');
    await t.stop();
  });

  it.each([
    ['a child enqueue with a session', (ctx: JobContext) => ctx.enqueue(Leaf, { n: 1 }, { session: {} } as never), 'INVALID_ARGUMENT'],
    ['a child class this engine does not know', (ctx: JobContext) => ctx.enqueue(UnregisteredChild, undefined), 'JOB_NOT_REGISTERED'],
    ['a child payload of the wrong shape', (ctx: JobContext) => ctx.enqueue(Leaf, { n: () => 1 } as never), 'INVALID_PAYLOAD'],
    ['waiting for no jobs', (ctx: JobContext) => ctx.waitForJob([]), 'INVALID_ARGUMENT'],
    ['waiting for an unknown job', (ctx: JobContext) => ctx.waitForJob('no-such-job'), 'INVALID_ARGUMENT'],
    ['a bad wait timeout', (ctx: JobContext) => ctx.waitForSignal('go', { timeout: 'soon' }), 'INVALID_ARGUMENT'],
    ['an empty signal name', (ctx: JobContext) => ctx.waitForSignal(''), 'INVALID_ARGUMENT'],
    ['a step inside a step', (ctx: JobContext) => ctx.step('outer', () => ctx.step('inner', () => 1)), 'INVALID_ARGUMENT'],
    ['a child enqueue inside a step', (ctx: JobContext) => ctx.step('outer', () => ctx.enqueue(Leaf, { n: 1 })), 'INVALID_ARGUMENT'],
  ])('refuses %s with a clear error and enqueues nothing', async (_label, use, code) => {
    misuse = use;
    const t = await createTestLoom({ jobs });
    const { id } = await t.enqueue(Misuse, undefined);
    await t.runUntilIdle();
    const job = await t.getJob(id);
    expect(job?.status).toBe('dead');
    expect(job?.errors.at(-1)?.code).toBe(code);
    expect(await t.store.listJobs({ parentId: id })).toEqual([]);
    await t.stop();
  });

  it('runs steps in parallel without mistaking them for nested ones, and names the outer step when they nest', async () => {
    misuse = async (ctx) => {
      const [a, b] = await Promise.all([ctx.step('a', async () => 1), ctx.step('b', async () => 2)]);
      return ctx.step('outer', () => ctx.sleep('inner-nap', '1m')).catch((err: Error) => ({ a, b, refused: err.message }));
    };
    const t = await createTestLoom({ jobs });
    const { id } = await t.enqueue(Misuse, undefined);
    await t.runUntilIdle();
    const job = await t.getJob(id);
    expect(job?.result).toEqual({ a: 1, b: 2, refused: expect.stringContaining('ctx.sleep("inner-nap")') });
    expect((job?.result as { refused: string }).refused).toContain('inside the function of step "outer"');
    await t.stop();
  });

  it('loom.signal says false for an unknown job and refuses bad names', async () => {
    const t = await createTestLoom({ jobs });
    expect(await t.loom.signal('no-such-job', 'go', 1)).toBe(false);
    await expect(t.loom.signal('', 'go')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(t.loom.signal('x', 42 as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await t.stop();
  });
});

describe('StepLog', () => {
  const at = new Date(0);
  const history: StepRecord[] = [
    { name: 'reserve', kind: 'step', status: 'completed', at, seq: 0 },
    { name: 'nap', kind: 'sleep', status: 'pending', at, seq: 1 },
    { name: 'waitForSignal:go#1', kind: 'signal', status: 'completed', at },
  ];

  it('replays a history reached in the same order and numbers new steps after it', () => {
    const log = new StepLog('j1', history);
    expect(log.reach('reserve', 'step')?.seq).toBe(0);
    expect(log.reach('nap', 'sleep')?.status).toBe('pending');
    expect(log.reach('waitForSignal:go#1', 'signal')?.status).toBe('completed');
    expect(log.reach('ship', 'step')).toBeUndefined();
    expect(log.stamp({ name: 'ship', kind: 'step', status: 'completed', at }).seq).toBe(3);
  });

  it('names the recorded and the reached step when the order differs', () => {
    const log = new StepLog('j1', history);
    let error: unknown;
    try {
      log.reach('nap', 'sleep');
    } catch (err) {
      error = err;
    }
    expect(error).toMatchObject({ code: 'NON_DETERMINISM', name: 'StepOrderError' });
    expect((error as Error).message).toContain('step #1: the history recorded step "reserve" there, but this run reached sleep "nap"');
  });

  it('reports a step recorded at another position when nothing was recorded at this one', () => {
    const log = new StepLog('j1', [{ name: 'late', kind: 'step', status: 'completed', at, seq: 5 }]);
    expect(() => log.reach('late', 'step')).toThrow(/reached step "late" as step #1, but the history recorded it as step #6/);
  });

  it('refuses a name recorded under another kind, and a name reached twice', () => {
    expect(() => new StepLog('j1', history).reach('reserve', 'sleep')).toThrow(/"reserve" was recorded as a step but this run uses it as a sleep/);
    const log = new StepLog('j1', []);
    log.reach('x', 'step');
    expect(() => log.reach('x', 'step')).toThrow(expect.objectContaining({ code: 'DUPLICATE_STEP' }));
  });

  it('numbers default names per prefix', () => {
    const log = new StepLog('j1', []);
    expect([log.nextName('enqueue:leaf'), log.nextName('enqueue:leaf'), log.nextName('waitForJob')]).toEqual([
      'enqueue:leaf#1',
      'enqueue:leaf#2',
      'waitForJob#1',
    ]);
  });
});
