import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, LoomError, MemoryStore, StoredSchedules, type JobContext, type LoomEventMap } from '@loom/core';
import { testHooks } from '@loom/core/internal';
import { createTestLoom, FakeClock } from '@loom/testing';

// loom.jobs, loom.queues, deadLetters.retry(filter) and schedules.trigger (OPERATIONS.md, issue 14),
// driven through the public facade on a MemoryStore and a FakeClock.

const ran: string[] = [];

@Job({ name: 'send', queue: 'emails' })
class Send {
  async run(p: { to: string }): Promise<string> {
    ran.push(p.to);
    return `sent to ${p.to}`;
  }
}

/** Resolved by the test: a handler that ignores ctx.signal until then. */
let release: (() => void) | undefined;
/** What the cooperative handler saw when its signal aborted. */
let abortedWith: unknown;

@Job({ name: 'slow', queue: 'work' })
class Slow {
  async run(p: { honour: boolean }, ctx: JobContext): Promise<string> {
    ran.push('slow');
    if (p.honour) {
      await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject((abortedWith = ctx.signal.reason as unknown))));
    }
    await new Promise<void>((resolve) => (release = resolve));
    return 'finished anyway';
  }
}

@Job({ name: 'parent', queue: 'work' })
class Parent {
  async run(_: unknown, ctx: JobContext): Promise<string> {
    const child = await ctx.enqueue(Send, { to: 'child' }, { delay: '1h' });
    try {
      await ctx.waitForJob(child.id);
      return 'child done';
    } catch (err) {
      return LoomError.is(err) ? err.code : 'other';
    }
  }
}

@Job({ name: 'fails', queue: 'work', retries: 0 })
class Fails {
  async run(): Promise<void> {
    throw new Error('nope');
  }
}

@Job({ name: 'nightly', queue: 'reports', schedule: { cron: '0 3 * * *', payload: { to: 'ops' } } })
class Nightly {
  async run(p: { to: string }, ctx: JobContext): Promise<void> {
    ran.push(`nightly ${p.to} ${ctx.scheduledFor?.toISOString()}`);
  }
}

@Job({ name: 'chatty' })
class Chatty {
  async run(p: { n: number }, ctx: JobContext): Promise<void> {
    for (let i = 0; i < p.n; i++) ctx.log.info({ i }, `line ${i}`);
    ctx.log.child({ part: 'end' }).warn({}, 'done');
  }
}

const JOBS = [Send, Slow, Parent, Fails, Nightly];

function record<E extends keyof LoomEventMap>(t: { on: (e: E, l: (p: LoomEventMap[E]) => void) => unknown }, event: E): LoomEventMap[E][] {
  const seen: LoomEventMap[E][] = [];
  t.on(event, (payload) => seen.push(payload));
  return seen;
}

async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  await expect(promise).rejects.toMatchObject({ code });
}

describe('loom.jobs', () => {
  it('lists jobs newest first in keyset pages, filtered by plain values', async () => {
    const t = await createTestLoom({ jobs: JOBS, start: false });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await t.enqueue(Send, { to: `u${i}` })).id);
      await t.advance('1s');
    }
    const seen: string[] = [];
    let page = await t.jobs.list({ status: 'queued', name: 'send', limit: 2 });
    seen.push(...page.jobs.map((j) => j.id));
    while (page.next) {
      page = await t.jobs.list({ status: 'queued', name: 'send', limit: 2, cursor: page.next });
      seen.push(...page.jobs.map((j) => j.id));
    }
    expect(seen).toEqual([...ids].reverse());
    expect(page.next).toBeUndefined();
    expect((await t.jobs.list({ status: ['dead'] })).jobs).toEqual([]);
    expect((await t.jobs.list({ queue: 'emails', createdAfter: new Date(t.clock.now().getTime() - 2_500) })).jobs.map((j) => j.id)).toEqual([ids[4], ids[3]]);
    expect(await t.jobs.get(ids[0])).toMatchObject({ id: ids[0], payload: { to: 'u0' }, status: 'queued' });
    expect((await t.jobs.list({ payload: { to: 'u3' } })).jobs.map((j) => j.id)).toEqual([ids[3]]);
    expect((await t.jobs.list({ payload: { to: 'u3' }, status: 'dead' })).jobs).toEqual([]);
    await t.stop();
  });

  it('refuses operator objects, unknown filters, bad limits and foreign cursors, reading nothing', async () => {
    const t = await createTestLoom({ jobs: JOBS });
    await expectCode(t.jobs.list({ name: { $ne: 'x' } as unknown as string }), 'INVALID_ARGUMENT');
    await expectCode(t.jobs.list({ status: ['queued', { $ne: 1 }] as never }), 'INVALID_ARGUMENT');
    await expectCode(t.jobs.list({ nmae: 'send' } as never), 'INVALID_ARGUMENT');
    await expectCode(t.jobs.list({ limit: 0 }), 'INVALID_ARGUMENT');
    await expectCode(t.jobs.list({ limit: 501 }), 'INVALID_ARGUMENT');
    await expectCode(t.jobs.list({ cursor: 'not-a-cursor!' }), 'INVALID_ARGUMENT');
    await expectCode(t.jobs.list({ createdAfter: new Date('nope') }), 'INVALID_ARGUMENT');
    await expectCode(t.jobs.list({ idempotencyKey: { $ne: null } as unknown as string }), 'INVALID_ARGUMENT');
    await expectCode(t.jobs.list({ payload: { to: { $ne: null } } as never }), 'INVALID_ARGUMENT');
    await expectCode(t.jobs.list({ payload: { $where: 'true' } }), 'INVALID_ARGUMENT');
    await expectCode(t.jobs.list({ payload: { 'to.$': 'x' } }), 'INVALID_ARGUMENT');
    await expectCode(t.jobs.list({ payload: { '.to': 'x' } }), 'INVALID_ARGUMENT');
    await expectCode(t.jobs.list({ payload: {} }), 'INVALID_ARGUMENT');
    await expectCode(t.jobs.list({ payload: [] as never }), 'INVALID_ARGUMENT');
    await expectCode(t.jobs.list({ payload: { a: 1, b: 2, c: 3, d: 4, e: 5, f: 6 } }), 'INVALID_ARGUMENT');
    await expectCode(t.jobs.cancel({ $ne: null } as unknown as string), 'INVALID_ARGUMENT');
    await expectCode(t.jobs.cancel('no-such-job'), 'JOB_NOT_FOUND');
    await expectCode(t.jobs.retry('no-such-job'), 'JOB_NOT_FOUND');
    await expectCode(t.jobs.remove('no-such-job'), 'JOB_NOT_FOUND');
    await t.stop();
  });

  it('cancels a queued job at once: it never runs, job:cancelled says why; retry brings it back', async () => {
    ran.length = 0;
    const t = await createTestLoom({ jobs: JOBS, start: false });
    const cancelled = record(t, 'job:cancelled');
    const { id } = await t.enqueue(Send, { to: 'ann' });
    expect(await t.jobs.cancel(id, { reason: 'customer asked' })).toEqual({ cancelled: true, status: 'cancelled' });
    expect(cancelled).toEqual([{ job: expect.objectContaining({ id, name: 'send' }), reason: 'customer asked' }]);
    await t.loom.start();
    await t.runUntilIdle();
    expect(ran).toEqual([]);
    expect(await t.jobs.cancel(id)).toEqual({ cancelled: false, status: 'cancelled' });
    expect(await t.jobs.retry(id)).toEqual({ retried: true, status: 'queued' });
    await t.runUntilIdle();
    expect(await t.getJob(id)).toMatchObject({ status: 'completed', result: 'sent to ann' });
    expect(await t.jobs.remove(id)).toEqual({ removed: true, status: 'completed' });
    expect(await t.getJob(id)).toBeNull();
    await t.stop();
  });

  it('cancels a running job in this process at once: ctx.signal aborts with CANCELLED, the outcome is discarded', async () => {
    ran.length = 0;
    const t = await createTestLoom({ jobs: JOBS });
    const cancelled = record(t, 'job:cancelled');
    const completed = record(t, 'job:completed');
    const { id } = await t.enqueue(Slow, { honour: true });
    await t.settle();
    expect(await t.jobs.cancel(id, { reason: 'stop it' })).toEqual({ cancelled: true, status: 'running' });
    await t.runUntilIdle();
    expect(abortedWith).toMatchObject({ code: 'CANCELLED', name: 'CancelledError' });
    expect(await t.getJob(id)).toMatchObject({ status: 'cancelled', cancelReason: 'stop it' });
    expect(cancelled).toEqual([{ job: expect.objectContaining({ id }), reason: 'stop it' }]);
    expect(completed).toEqual([]);
    await t.stop();
  });

  it('cancels a job running in another instance within one heartbeat (lease / 3)', async () => {
    abortedWith = undefined;
    const store = new MemoryStore();
    const clock = new FakeClock();
    const runner = await createTestLoom({ jobs: JOBS, store, clock, lease: '30s' });
    const operator = await createTestLoom({ jobs: JOBS, store, clock, start: false });
    const cancelled = record(runner, 'job:cancelled');
    const { id } = await runner.enqueue(Slow, { honour: true });
    await runner.settle();
    expect(await operator.jobs.cancel(id)).toEqual({ cancelled: true, status: 'running' });
    await runner.advance('9s');
    expect(abortedWith).toBeUndefined();
    await runner.advance('1s'); // the heartbeat at lease / 3
    expect(abortedWith).toMatchObject({ code: 'CANCELLED' });
    expect(await store.getJob(id)).toMatchObject({ status: 'cancelled' });
    expect(cancelled).toHaveLength(1);
    await runner.stop();
  });

  it('ends a job cancelled, not completed, when its cancel lands between the handler returning and the completion', async () => {
    const memory = new MemoryStore();
    // Another instance's jobs.cancel arrives just before this engine's completion reaches the store.
    const store = new Proxy(memory, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        if (prop !== 'completeMany') return (value as (...a: unknown[]) => unknown).bind(target);
        return async (items: { lease: { jobId: string } }[], now: Date) => {
          for (const item of items) await target.cancelJob(item.lease.jobId, { reason: 'too late', now });
          return target.completeMany(items as Parameters<MemoryStore['completeMany']>[0], now);
        };
      },
    });
    const t = await createTestLoom({ jobs: JOBS, store });
    const cancelled = record(t, 'job:cancelled');
    const completed = record(t, 'job:completed');
    const { id } = await t.enqueue(Send, { to: 'late' });
    await t.runUntilIdle();
    expect(await memory.getJob(id)).toMatchObject({ status: 'cancelled', cancelReason: 'too late' });
    expect(cancelled).toHaveLength(1);
    expect(completed).toEqual([]);
    await t.stop();
  });

  it('keeps the slot of a handler that ignores the signal until it returns, then ends the job cancelled', async () => {
    ran.length = 0;
    const t = await createTestLoom({ jobs: JOBS, lease: '30s', concurrency: 1 });
    const { id } = await t.enqueue(Slow, { honour: false });
    await t.settle();
    await t.jobs.cancel(id);
    await t.enqueue(Send, { to: 'waits' });
    await t.advance('1m'); // heartbeats go on: the lease is held, nobody else takes the job
    expect(testHooks(t.loom).inFlight()).toHaveLength(1);
    expect(await t.getJob(id)).toMatchObject({ status: 'running' });
    expect(ran).toEqual(['slow']);
    release!();
    await t.runUntilIdle();
    expect(await t.getJob(id)).toMatchObject({ status: 'cancelled' });
    expect((await t.getJob(id))?.result).toBeUndefined();
    expect(ran).toEqual(['slow', 'waits']);
    await t.stop();
  });

  it("fails a parent's waitForJob with CHILD_CANCELLED when the child is cancelled", async () => {
    const t = await createTestLoom({ jobs: JOBS });
    const { id: parentId } = await t.enqueue(Parent);
    await t.runUntilIdle();
    const [child] = (await t.jobs.list({ name: 'send' })).jobs;
    expect(child.parentId).toBe(parentId);
    await t.jobs.cancel(child.id);
    await t.runUntilIdle();
    expect(await t.getJob(parentId)).toMatchObject({ status: 'completed', result: 'CHILD_CANCELLED' });
    await t.stop();
  });
});

describe('ctx.log tail', () => {
  it('keeps the lines a handler logs on the job, shown by jobs.get', async () => {
    const t = await createTestLoom({ jobs: [Chatty] });
    const { id } = await t.enqueue(Chatty, { n: 3 });
    await t.runUntilIdle();
    const job = await t.jobs.get(id);
    expect(job?.logs?.map((l) => [l.level, l.msg, l.attempt])).toEqual([
      ['info', 'line 0', 1],
      ['info', 'line 1', 1],
      ['info', 'line 2', 1],
      ['warn', 'done', 1],
    ]);
    await t.stop();
  });
});

describe('loom.queues', () => {
  it('pauses a queue for every instance sharing the store: enqueue works, nothing is claimed until resume', async () => {
    ran.length = 0;
    const store = new MemoryStore();
    const clock = new FakeClock();
    const worker = await createTestLoom({ jobs: JOBS, store, clock, pollInterval: '1s' });
    const operator = await createTestLoom({ jobs: JOBS, store, clock, start: false });
    const paused = record(operator, 'queue:paused');
    const resumed = record(operator, 'queue:resumed');
    await operator.queues.pause('emails');
    expect(paused).toEqual([{ queue: 'emails' }]);
    await worker.advance('1s'); // the worker reads the pauses once per poll interval
    await worker.enqueue(Send, { to: 'held' });
    await worker.advance('5s');
    expect(ran).toEqual([]);
    expect(await operator.queues.list()).toEqual([
      {
        name: 'emails',
        paused: true,
        counts: { queued: 1, running: 0, waiting: 0, completed: 0, dead: 0, cancelled: 0 },
        oldestQueuedAt: expect.any(Date),
        sleeping: 0,
      },
    ]);
    await operator.queues.resume('emails');
    expect(resumed).toEqual([{ queue: 'emails' }]);
    await worker.advance('1s');
    expect(ran).toEqual(['held']);
    await expectCode(operator.queues.pause({ $ne: '' } as unknown as string), 'INVALID_ARGUMENT');
    await worker.stop();
  });
});

describe('deadLetters.retry(filter) and schedules.trigger', () => {
  it('retries every matching dead letter in bulk and returns the count', async () => {
    const t = await createTestLoom({ jobs: JOBS });
    for (let i = 0; i < 3; i++) await t.enqueue(Fails);
    await t.runUntilIdle();
    expect(await t.deadLetters.list()).toHaveLength(3);
    const progress: number[] = [];
    expect(await t.deadLetters.retry({ name: 'fails' }, { onProgress: (n) => progress.push(n) })).toBe(3);
    expect(progress.at(-1)).toBe(3);
    await t.runUntilIdle();
    // Each ran again (and failed again): back in the dead letters with both failures in its history.
    const again = await t.deadLetters.list({ name: 'fails' });
    expect(again.map((d) => d.job.errors.length)).toEqual([2, 2, 2]);
    await expectCode(t.deadLetters.retry({ name: { $ne: '' } } as never), 'INVALID_ARGUMENT');
    await t.stop();
  });

  it('triggers one run of a schedule now, from code and from the store alone (the command line)', async () => {
    ran.length = 0;
    const t = await createTestLoom({ jobs: JOBS });
    const now = t.clock.now();
    await t.schedules.trigger('nightly');
    await t.runUntilIdle();
    expect(ran).toEqual([`nightly ops ${now.toISOString()}`]);
    const stored = new StoredSchedules({ store: t.store, clock: t.clock });
    expect(await stored.list()).toEqual([
      expect.objectContaining({ name: 'nightly', cron: '0 3 * * *', paused: false, nextFireAt: new Date('2026-01-01T03:00:00Z') }),
    ]);
    await t.advance('1s');
    await stored.trigger('nightly');
    await t.runUntilIdle();
    expect(ran).toHaveLength(2);
    await stored.pause('nightly');
    await t.advance('4h');
    expect(ran).toHaveLength(2);
    await stored.resume('nightly');
    expect((await stored.list())[0].nextFireAt).toEqual(new Date('2026-01-02T03:00:00Z'));
    await expectCode(stored.trigger('weekly'), 'SCHEDULE_NOT_FOUND');
    await t.stop();
  });
});
