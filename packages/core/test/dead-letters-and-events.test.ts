import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, type JobContext, type LoomEventMap } from '@loom/core';
import { createTestLoom } from '@loom/testing';

let failUntilAttempt = 0;
@Job({ name: 'fragile', queue: 'work', retries: 1, backoff: { type: 'fixed', delay: '1s' } })
class Fragile {
  async run(p: { id: number }, ctx: JobContext): Promise<number> {
    if (ctx.attempt <= failUntilAttempt) throw new Error(`fragile ${p.id} failed`);
    return p.id;
  }
}

@Job({ name: 'other', queue: 'work', retries: 0 })
class Other {
  async run(): Promise<void> {
    throw new Error('always');
  }
}

describe('dead letters', () => {
  it('lists, retries (attempts reset) and purges', async () => {
    failUntilAttempt = 99;
    const t = await createTestLoom({ jobs: [Fragile, Other] });
    const a = await t.enqueue(Fragile, { id: 1 });
    const b = await t.enqueue(Fragile, { id: 2 });
    const c = await t.enqueue(Other);
    await t.advance('1s');
    expect((await t.loom.deadLetters.list()).map((d) => d.id).sort()).toEqual([a.id, b.id, c.id].sort());
    const fragile = await t.loom.deadLetters.list({ name: 'fragile' });
    expect(fragile.map((d) => d.id).sort()).toEqual([a.id, b.id].sort());
    expect(fragile[0]?.reason).toMatch(/failed 2 of 2 attempts/);
    expect(fragile[0]?.job.errors).toHaveLength(2);

    failUntilAttempt = 0;
    expect(await t.loom.deadLetters.retry(a.id)).toBe(a.id);
    expect(await t.loom.deadLetters.retry(a.id)).toBeNull();
    await t.runUntilIdle();
    expect(await t.getJob(a.id)).toMatchObject({ status: 'completed', attempt: 1, result: 1 });

    expect(await t.loom.deadLetters.purge({ name: 'other' })).toBe(1);
    expect((await t.loom.deadLetters.list()).map((d) => d.id)).toEqual([b.id]);
    const stats = await t.loom.stats();
    expect(stats.deadLetters).toBe(1);
    expect(stats.queues.work).toMatchObject({ completed: 1 });
    await t.stop();
  });
  it("numbers a replayed job's failures on from the attempts before: no attempt appears twice in its error history", async () => {
    failUntilAttempt = 99;
    const t = await createTestLoom({ jobs: [Fragile] });
    const { id } = await t.enqueue(Fragile, { id: 7 });
    await t.advance('1s');
    expect((await t.getJob(id))?.errors.map((e) => e.attempt)).toEqual([1, 2]);
    expect(await t.deadLetters.retry(id)).toBe(id);
    await t.advance('1s');
    const dead = await t.getJob(id);
    expect(dead).toMatchObject({ status: 'dead', attempt: 2, priorAttempts: 2 });
    expect(dead?.errors.map((e) => e.attempt)).toEqual([1, 2, 3, 4]);
    expect(dead?.deadReason).toMatch(/failed 2 of 2 attempts/);
    await t.stop();
  });
});

describe('events', () => {
  it('reports started, failed, retrying, completed and dead in order', async () => {
    failUntilAttempt = 1;
    const t = await createTestLoom({ jobs: [Fragile, Other] });
    const seen: string[] = [];
    const names = ['job:started', 'job:completed', 'job:failed', 'job:retrying', 'job:dead'] as const;
    for (const name of names) t.loom.on(name, (e: LoomEventMap[(typeof names)[number]]) => seen.push(`${name} ${e.job.name}#${e.job.attempt}`));
    await t.enqueue(Fragile, { id: 1 });
    await t.runUntilIdle();
    await t.advance('1s');
    await t.enqueue(Other);
    await t.runUntilIdle();
    expect(seen).toEqual([
      'job:started fragile#1',
      'job:failed fragile#1',
      'job:retrying fragile#1',
      'job:started fragile#2',
      'job:completed fragile#2',
      'job:started other#1',
      'job:failed other#1',
      'job:dead other#1',
    ]);
    await t.stop();
  });

  it('logs a throwing listener and keeps working; unsubscribing stops delivery', async () => {
    failUntilAttempt = 0;
    const t = await createTestLoom({ jobs: [Fragile] });
    t.loom.on('job:started', () => {
      throw new Error('listener bug');
    });
    let count = 0;
    const off = t.loom.on('job:completed', () => count++);
    const first = await t.enqueue(Fragile, { id: 1 });
    await t.runUntilIdle();
    expect((await t.getJob(first.id))?.status).toBe('completed');
    expect(count).toBe(1);
    expect(t.logs.some((e) => e.level === 'error' && /A listener of "job:started" threw/.test(e.msg))).toBe(true);
    off();
    await t.enqueue(Fragile, { id: 2 });
    await t.runUntilIdle();
    expect(count).toBe(1);
    await t.stop();
  });
});
