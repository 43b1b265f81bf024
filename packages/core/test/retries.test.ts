import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, PermanentError, type JobContext } from '@loom/core';
import { createTestLoom } from '@loom/testing';
import { z } from 'zod';

let flakyCalls = 0;
@Job({ name: 'flaky', retries: 3, backoff: { type: 'fixed', delay: '10s' } })
class Flaky {
  async run(payload: { failTimes: number }, ctx: JobContext): Promise<string> {
    flakyCalls++;
    if (ctx.attempt <= payload.failTimes) throw new Error(`boom ${ctx.attempt}`);
    return `ok on ${ctx.attempt}`;
  }
}

@Job({ name: 'permanent', retries: 5 })
class Permanent {
  async run(): Promise<void> {
    throw new PermanentError('card declined');
  }
}

let thrown: unknown;
@Job({ name: 'throws-anything', retries: 0 })
class ThrowsAnything {
  async run(): Promise<void> {
    throw thrown;
  }
}

let strictRuns = 0;
@Job({ name: 'strict', retries: 5, payload: z.object({ n: z.number().max(10) }) })
class Strict {
  async run(_: { n: number }): Promise<void> {
    strictRuns++;
  }
}

describe('retries', () => {
  it('retries after the backoff and then succeeds', async () => {
    flakyCalls = 0;
    const t = await createTestLoom({ jobs: [Flaky] });
    const { id } = await t.enqueue(Flaky, { failTimes: 2 });
    await t.runUntilIdle();
    expect((await t.getJob(id))?.status).toBe('queued');
    expect(flakyCalls).toBe(1);
    await t.advance('9s');
    expect(flakyCalls).toBe(1);
    await t.advance('1s');
    expect(flakyCalls).toBe(2);
    await t.advance('10s');
    const job = await t.getJob(id);
    expect(job?.status).toBe('completed');
    expect(job?.result).toBe('ok on 3');
    expect(job?.errors.map((e) => e.message)).toEqual(['boom 1', 'boom 2']);
    await t.stop();
  });

  it('moves a job that exhausts its retries to the dead letters with the full error history', async () => {
    const t = await createTestLoom({ jobs: [Flaky] });
    const dead: string[] = [];
    t.loom.on('job:dead', (e) => dead.push(e.reason));
    const { id } = await t.enqueue(Flaky, { failTimes: 99 });
    await t.advance('1m');
    const job = await t.getJob(id);
    expect(job?.status).toBe('dead');
    expect(job?.errors.map((e) => [e.attempt, e.message])).toEqual([
      [1, 'boom 1'],
      [2, 'boom 2'],
      [3, 'boom 3'],
      [4, 'boom 4'],
    ]);
    expect(job?.errors[0]?.stack).toContain('boom 1');
    expect(dead).toEqual(['boom 4 (failed 4 of 4 attempts)']);
    const letters = await t.loom.deadLetters.list({ name: 'flaky' });
    expect(letters.map((l) => l.id)).toEqual([id]);
    await t.stop();
  });

  it('skips the remaining retries on PermanentError', async () => {
    const t = await createTestLoom({ jobs: [Permanent] });
    const { id } = await t.enqueue(Permanent);
    await t.runUntilIdle();
    const job = await t.getJob(id);
    expect(job?.status).toBe('dead');
    expect(job?.attempt).toBe(1);
    expect(job?.deadReason).toBe('card declined');
    expect(job?.errors[0]?.code).toBe('PERMANENT');
    await t.stop();
  });

  it.each([
    ['a string', 'out of stock', 'out of stock'],
    ['an empty string', '', 'The handler threw an empty string; throw an Error with a reason'],
    ['undefined', undefined, 'The handler threw undefined; throw an Error with a reason'],
    ['null', null, 'The handler threw null; throw an Error with a reason'],
    ['a plain object', { code: 42 }, 'The handler threw a non-Error value: {"code":42}'],
    ['an Error without message', new Error(''), 'Error thrown without a message'],
  ])('records %s thrown by a handler as a proper error with a reason', async (_label, value, message) => {
    thrown = value;
    const t = await createTestLoom({ jobs: [ThrowsAnything] });
    const { id } = await t.enqueue(ThrowsAnything);
    await t.runUntilIdle();
    const job = await t.getJob(id);
    expect(job?.status).toBe('dead');
    expect(job?.errors[0]?.message).toBe(message);
    expect(job?.deadReason).toContain(message);
    await t.stop();
  });

  it('dead-letters a stored payload that fails its schema at run time, without retrying', async () => {
    strictRuns = 0;
    const t = await createTestLoom({ jobs: [Strict] });
    // A payload that passed at enqueue but no longer does (e.g. the schema tightened since).
    const [{ id }] = await t.store.enqueue([{ name: 'strict', queue: 'default', payload: { n: 11 }, priority: 0, runAt: t.clock.now(), maxAttempts: 6 }], {
      now: t.clock.now(),
    });
    await t.runUntilIdle();
    const job = await t.getJob(id!);
    expect(job?.status).toBe('dead');
    expect(job?.attempt).toBe(1);
    expect(job?.errors[0]?.code).toBe('INVALID_PAYLOAD');
    expect(job?.deadReason).toMatch(/Invalid payload for job "strict" at n/);
    expect(strictRuns).toBe(0);
    await t.stop();
  });
});
