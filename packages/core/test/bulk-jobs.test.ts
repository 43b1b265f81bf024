import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, LoomError, MemoryStore, type JobContext, type JobPageQuery, type JobStore, type JobSummary } from '@loom/core';
import { createTestLoom, FakeClock } from '@loom/testing';

// Bulk actions of loom.jobs (issue 34 item 5): cancelMany, retryMany, removeMany, runNowMany and
// clean, over ids or a jobs.list filter, with dry runs, on a MemoryStore and a FakeClock.

const ran: string[] = [];

@Job({ name: 'send', queue: 'emails' })
class Send {
  async run(p: { to: string }): Promise<string> {
    ran.push(p.to);
    return `sent to ${p.to}`;
  }
}

@Job({ name: 'fails', queue: 'work', retries: 0 })
class Fails {
  async run(): Promise<void> {
    throw new Error('nope');
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

const JOBS = [Send, Fails, Parent];

/** A store whose page reads are recorded, and `afterPage` runs after each (to change jobs behind a bulk action's back). */
function spied(store: JobStore, afterPage?: (page: JobSummary[]) => Promise<void>): { store: JobStore; pages: JobPageQuery[] } {
  const pages: JobPageQuery[] = [];
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'listJobPage') {
        return async (query: JobPageQuery) => {
          pages.push(query);
          const page = await target.listJobPage(query);
          await afterPage?.(page);
          return page;
        };
      }
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: proxy, pages };
}

describe('loom.jobs bulk actions', () => {
  it('cancels the jobs of a list of ids, each as jobs.cancel does, and says what it skipped and why', async () => {
    const t = await createTestLoom({ jobs: JOBS, start: false });
    const cancelledEvents: string[] = [];
    t.on('job:cancelled', ({ job }) => cancelledEvents.push(job.id));
    const a = (await t.enqueue(Send, { to: 'a' })).id;
    const b = (await t.enqueue(Send, { to: 'b' })).id;
    const c = (await t.enqueue(Send, { to: 'c' })).id;
    await t.jobs.cancel(c);
    const result = await t.jobs.cancelMany({ ids: [a, b, c, 'no-such-job'] }, { reason: 'bulk' });
    expect(result).toMatchObject({ action: 'cancel', dryRun: false, matched: 3, changed: 2, requested: 0, skipped: 2 });
    expect(result.skippedBy).toEqual([
      { reason: 'cancelled: cancel applies to queued, running, waiting', count: 1, ids: [c] },
      { reason: 'no job has this id', count: 1, ids: ['no-such-job'] },
    ]);
    expect(result.sample.map((j) => [j.id, j.status])).toEqual([
      [a, 'cancelled'],
      [b, 'cancelled'],
    ]);
    expect(await t.getJob(a)).toMatchObject({ status: 'cancelled', cancelReason: 'bulk' });
    expect(cancelledEvents).toEqual([c, a, b]);
    await t.stop();
  });

  it('with dryRun changes nothing and predicts what the real run then does', async () => {
    const t = await createTestLoom({ jobs: JOBS, start: false });
    for (let i = 0; i < 4; i++) await t.enqueue(Send, { to: `u${i}` });
    const done = (await t.enqueue(Send, { to: 'x' })).id;
    await t.jobs.cancel(done);
    const before = (await t.jobs.list()).jobs;
    for (const action of ['cancelMany', 'retryMany', 'removeMany', 'runNowMany'] as const) {
      const preview = await t.jobs[action]({ filter: { queue: 'emails' } }, { dryRun: true });
      expect(preview.dryRun).toBe(true);
      expect((await t.jobs.list()).jobs).toEqual(before);
      if (action === 'cancelMany') expect(preview).toMatchObject({ matched: 4, changed: 4, skipped: 0 });
      if (action === 'retryMany') expect(preview).toMatchObject({ matched: 1, changed: 1, skipped: 0, sample: [expect.objectContaining({ id: done })] });
      if (action === 'removeMany') expect(preview).toMatchObject({ matched: 1, changed: 1 });
      if (action === 'runNowMany')
        expect(preview).toMatchObject({ matched: 4, changed: 0, skippedBy: [{ reason: 'queued: already due', count: 4, ids: expect.any(Array) }] });
    }
    const preview = await t.jobs.cancelMany({ filter: { queue: 'emails' } }, { dryRun: true });
    const real = await t.jobs.cancelMany({ filter: { queue: 'emails' } });
    expect({ ...real, dryRun: true, sample: [] }).toEqual({ ...preview, sample: [] });
    await t.stop();
  });

  it('walks every job matching a filter in pages of 500, never loading them at once', async () => {
    const base = new MemoryStore();
    const { store, pages } = spied(base);
    const t = await createTestLoom({ jobs: JOBS, store, start: false });
    await t.enqueueMany(
      Send,
      Array.from({ length: 1_200 }, (_, i) => ({ to: `u${i}` })),
    );
    await t.enqueue(Fails, undefined);
    pages.length = 0;
    const result = await t.jobs.cancelMany({ filter: { name: 'send', status: ['queued', 'completed'] } });
    expect(result).toMatchObject({ matched: 1_200, changed: 1_200, skipped: 0 });
    expect(result.sample).toHaveLength(20);
    expect(pages.map((p) => p.limit)).toEqual([500, 500, 500]);
    // Only the statuses a cancel applies to are read: completed jobs are not.
    expect(pages.every((p) => p.statuses.join() === 'queued')).toBe(true);
    expect((await t.jobs.list({ status: 'queued' })).jobs.map((j) => j.name)).toEqual(['fails']);
    await t.stop();
  });

  it('skips a job that changed state after it was read, never forcing it', async () => {
    const base = new MemoryStore();
    // The job another operator cancels as soon as a page holding it has been read (chosen by id:
    // jobs enqueued at one instant are read in id order, which is random).
    let target: string | undefined;
    let meddled: string | undefined;
    const { store } = spied(base, async (page) => {
      if (target === undefined || !page.some((j) => j.id === target)) return;
      meddled = target;
      target = undefined;
      await base.cancelJob(meddled, { now: new Date() }); // another operator got there first
    });
    const t = await createTestLoom({ jobs: JOBS, store, start: false });
    const ids = [(await t.enqueue(Send, { to: 'a' })).id, (await t.enqueue(Send, { to: 'b' })).id];
    target = ids[0];
    const result = await t.jobs.runNowMany({ filter: { name: 'send' } }, { dryRun: false });
    expect(result).toMatchObject({ matched: 2, changed: 0, skipped: 2 });
    expect(meddled).toBe(ids[0]);
    await t.jobs.retry(ids[0]!);
    await t.enqueue(Send, { to: 'c' }, { delay: '1h' });
    target = ids[0];
    const cancel = await t.jobs.cancelMany({ filter: { name: 'send' } });
    // The job cancelled behind its back is skipped with the status it found; the other two change.
    expect(cancel).toMatchObject({ matched: 3, changed: 2, skipped: 1 });
    expect(cancel.skippedBy).toEqual([{ reason: 'cancelled: cancel applies to queued, running, waiting', count: 1, ids: [meddled] }]);
    await t.stop();
  });

  it('retries dead and cancelled jobs matching a filter; they run again', async () => {
    ran.length = 0;
    const t = await createTestLoom({ jobs: JOBS });
    for (let i = 0; i < 3; i++) await t.enqueue(Fails, undefined);
    await t.runUntilIdle();
    expect((await t.jobs.list({ status: 'dead' })).jobs).toHaveLength(3);
    const sent = (await t.enqueue(Send, { to: 'kept' })).id;
    await t.runUntilIdle();
    const result = await t.jobs.retryMany({ filter: { status: ['dead', 'completed'] } });
    expect(result).toMatchObject({ matched: 3, changed: 3, skipped: 0 });
    await t.runUntilIdle();
    const dead = (await t.jobs.list({ status: 'dead' })).jobs;
    expect(dead).toHaveLength(3);
    // Each ran once more: a second error in its history.
    for (const job of dead) expect((await t.getJob(job.id))!.errors).toHaveLength(2);
    expect(await t.getJob(sent)).toMatchObject({ status: 'completed' });
    await t.stop();
  });

  it('runs delayed jobs now: they run without the clock moving; due and sleeping ones are skipped', async () => {
    ran.length = 0;
    const t = await createTestLoom({ jobs: JOBS, start: false });
    const later = [(await t.enqueue(Send, { to: 'l1' }, { delay: '1h' })).id, (await t.enqueue(Send, { to: 'l2' }, { delay: '2h' })).id];
    const due = (await t.enqueue(Send, { to: 'now' })).id;
    const result = await t.jobs.runNowMany({ ids: [...later, due] });
    expect(result).toMatchObject({
      action: 'runNow',
      matched: 3,
      changed: 2,
      skipped: 1,
      skippedBy: [{ reason: 'queued: already due', count: 1, ids: [due] }],
    });
    expect((await t.getJob(later[0]!))!.runAt).toEqual(t.clock.now());
    expect(await t.jobs.runNow(due)).toEqual({ due: false, status: 'queued' });
    await t.loom.start();
    await t.settle();
    expect(ran.sort()).toEqual(['l1', 'l2', 'now']);
    await expect(t.jobs.runNow('no-such-job')).rejects.toMatchObject({ code: 'JOB_NOT_FOUND' });
    await t.stop();
  });

  it("cancelling a child in bulk fails its parent's waitForJob, as the single cancel does", async () => {
    const t = await createTestLoom({ jobs: JOBS });
    const { id: parentId } = await t.enqueue(Parent, undefined);
    await t.runUntilIdle();
    const result = await t.jobs.cancelMany({ filter: { name: 'send', status: 'queued' } });
    expect(result).toMatchObject({ matched: 1, changed: 1 });
    await t.runUntilIdle();
    expect(await t.getJob(parentId)).toMatchObject({ status: 'completed', result: 'CHILD_CANCELLED' });
    await t.stop();
  });

  it('removes finished jobs in bulk and leaves active ones', async () => {
    const t = await createTestLoom({ jobs: JOBS, start: false });
    const queued = (await t.enqueue(Send, { to: 'q' })).id;
    const cancelled = (await t.enqueue(Send, { to: 'c' })).id;
    await t.jobs.cancel(cancelled);
    const result = await t.jobs.removeMany({ ids: [queued, cancelled] });
    expect(result).toMatchObject({
      matched: 2,
      changed: 1,
      skippedBy: [{ reason: 'queued: remove applies to completed, dead, cancelled', count: 1, ids: [queued] }],
    });
    expect(await t.getJob(cancelled)).toBeNull();
    expect(await t.getJob(queued)).not.toBeNull();
    await t.stop();
  });

  it('cleans jobs that finished before a date: completed ones by default, others when asked; dry run first', async () => {
    const clock = new FakeClock();
    const t = await createTestLoom({ jobs: JOBS, clock });
    const old = [(await t.enqueue(Send, { to: 'o1' })).id, (await t.enqueue(Send, { to: 'o2' })).id];
    const oldDead = (await t.enqueue(Fails, undefined)).id;
    await t.runUntilIdle();
    await t.advance('8d');
    const cutoff = new Date(clock.now().getTime() - 7 * 86_400_000);
    // Created before the cut-off, finished after it: not removed.
    const slow = (await t.enqueue(Send, { to: 'recent' }, { delay: '1h' })).id;
    await t.advance('2h');
    await t.runUntilIdle();
    await t.jobs.runNow(slow);
    const preview = await t.jobs.clean({ olderThan: new Date(clock.now().getTime() - 3_600_000 * 1.5), dryRun: true });
    expect(preview).toMatchObject({ dryRun: true, matched: 2, changed: 2 });
    expect(await t.getJob(old[0]!)).not.toBeNull();
    const result = await t.jobs.clean({ olderThan: cutoff });
    expect(result).toMatchObject({ action: 'remove', dryRun: false, matched: 2, changed: 2, skipped: 0 });
    expect(await t.getJob(old[0]!)).toBeNull();
    expect(await t.getJob(oldDead)).toMatchObject({ status: 'dead' });
    expect(await t.getJob(slow)).toMatchObject({ status: 'completed' });
    expect(await t.jobs.clean({ olderThan: cutoff, status: ['completed', 'dead'] })).toMatchObject({ matched: 1, changed: 1 });
    expect(await t.getJob(oldDead)).toBeNull();
    await t.stop();
  });

  it('refuses operator objects, limits, cursors and malformed targets, changing nothing', async () => {
    const t = await createTestLoom({ jobs: JOBS, start: false });
    const id = (await t.enqueue(Send, { to: 'a' })).id;
    const refused = async (promise: Promise<unknown>) => expect(promise).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await refused(t.jobs.cancelMany({ filter: { name: { $ne: 'x' } as unknown as string } }));
    await refused(t.jobs.cancelMany({ filter: { status: { $in: ['queued'] } } as never }));
    await refused(t.jobs.cancelMany({ filter: { payload: { to: { $ne: null } } as never } }));
    await refused(t.jobs.cancelMany({ filter: { limit: 10 } as never }));
    await refused(t.jobs.cancelMany({ filter: { cursor: 'x' } as never }));
    await refused(t.jobs.cancelMany({ ids: [id], filter: {} } as never));
    await refused(t.jobs.cancelMany({} as never));
    await refused(t.jobs.cancelMany({ ids: [{ $ne: null }] as never }));
    await refused(t.jobs.cancelMany({ ids: Array.from({ length: 1_001 }, (_, i) => `id${i}`) }));
    await refused(t.jobs.cancelMany({ ids: [id] }, { dryRun: 'yes' as never }));
    await refused(t.jobs.clean({ olderThan: new Date('nope') }));
    await refused(t.jobs.clean({ olderThan: new Date(), status: 'queued' as never }));
    expect(await t.getJob(id)).toMatchObject({ status: 'queued' });
    await t.stop();
  });
});
