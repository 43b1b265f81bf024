import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { DEFAULT_JOB_LOG_LINES, Job, jobLogLineBytes, LoomError, MemoryStore, type JobContext, type JobLogLine, type JobStore } from '@loom/core';
import { createTestLoom, FakeClock } from '@loom/testing';
import { LogBuffer, LOG_FLUSH_MS, toFields } from '../src/engine/log-tail.js';

// Issue 34, item 3: a job keeps a bounded tail of its ctx.log lines (MemoryStore, FakeClock).

@Job({ name: 'chatty', retries: 1, backoff: { type: 'fixed', delay: '1s' } })
class Chatty {
  async run(p: { n: number; fail?: boolean; size?: number }, ctx: JobContext): Promise<void> {
    for (let i = 0; i < p.n; i++) ctx.log.info({ i }, `line ${i}${p.size ? ` ${'x'.repeat(p.size)}` : ''}`);
    ctx.log.child({ part: 'end' }).warn({ err: Object.assign(new Error('boom'), { code: 'E_BOOM' }) }, 'done');
    if (p.fail && ctx.attempt === 1) throw new Error('first attempt fails');
  }
}

let release: (() => void) | undefined;

@Job({ name: 'long' })
class Long {
  async run(_: unknown, ctx: JobContext): Promise<void> {
    ctx.log.info({}, 'started');
    ctx.log.debug({ step: 1 }, 'working');
    await new Promise<void>((resolve) => (release = resolve));
    ctx.log.error({}, 'finishing');
  }
}

/** A MemoryStore that records the lines of each appendLogs call, and those completions carry (`completed`). */
function countingStore(): { store: JobStore; appends: number[]; completed: number[] } {
  const appends: number[] = [];
  const completed: number[] = [];
  const memory = new MemoryStore();
  const store = new Proxy(memory, {
    get(target, prop, receiver) {
      if (prop === 'appendLogs') {
        return (...args: Parameters<JobStore['appendLogs']>) => {
          appends.push(args[1].length);
          return target.appendLogs(...args);
        };
      }
      if (prop === 'completeMany') {
        return (...args: Parameters<JobStore['completeMany']>) => {
          for (const item of args[0]) if (item.logs) completed.push(item.logs.lines.length);
          return target.completeMany(...args);
        };
      }
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store, appends, completed };
}

describe('ctx.log tail', () => {
  it('keeps level, message, fields (child bindings, errors), engine time and attempt; written with the outcome', async () => {
    const { store, appends, completed } = countingStore();
    const t = await createTestLoom({ jobs: [Chatty], store });
    const { id } = await t.enqueue(Chatty, { n: 3, fail: true });
    const first = t.clock.now();
    await t.runUntilIdle();
    await t.advance('1s');
    await t.runUntilIdle();
    const job = await t.jobs.get(id);
    expect(job?.status).toBe('completed');
    const end = { level: 'warn', msg: 'done', fields: { part: 'end', err: { name: 'Error', message: 'boom', code: 'E_BOOM' } } };
    const run = (attempt: number) => {
      const now = new Date(first.getTime() + (attempt - 1) * 1_000);
      return [
        { at: now, level: 'info', msg: 'line 0', attempt, fields: { i: 0 } },
        { at: now, level: 'info', msg: 'line 1', attempt, fields: { i: 1 } },
        { at: now, level: 'info', msg: 'line 2', attempt, fields: { i: 2 } },
        { at: now, attempt, ...end },
      ];
    };
    expect(job?.logs).toEqual([...run(1), ...run(2)]);
    // Lines are buffered, not written one by one: the failed run's in one appendLogs before its
    // retry, the completed run's with its completion (no write of their own).
    expect(appends).toEqual([4]);
    expect(completed).toEqual([4]);
    await t.stop();
  });

  it('keeps the last `jobLogs.lines` lines across runs, oldest dropped', async () => {
    const t = await createTestLoom({ jobs: [Chatty], jobLogs: { lines: 5 } });
    const { id } = await t.enqueue(Chatty, { n: 3, fail: true });
    await t.runUntilIdle();
    await t.advance('1s');
    await t.runUntilIdle();
    const logs = (await t.jobs.get(id))!.logs!;
    expect(logs.map((l) => `${l.attempt}:${l.msg}`)).toEqual(['1:done', '2:line 0', '2:line 1', '2:line 2', '2:done']);
    await t.stop();
  });

  it('keeps at most `jobLogs.bytes`, across runs, and at most DEFAULT_JOB_LOG_LINES lines by default', async () => {
    const t = await createTestLoom({ jobs: [Chatty], jobLogs: { bytes: 4096 } });
    const { id } = await t.enqueue(Chatty, { n: 30, size: 400, fail: true });
    await t.runUntilIdle();
    await t.advance('1s');
    await t.runUntilIdle();
    const logs = (await t.jobs.get(id))!.logs!;
    const weight = logs.reduce((sum, l) => sum + jobLogLineBytes(l), 0);
    expect(weight).toBeLessThanOrEqual(4096);
    expect(weight + jobLogLineBytes(logs[0]!)).toBeGreaterThan(4096 - 500);
    expect(logs.at(-1)).toMatchObject({ attempt: 2, msg: 'done' });
    expect(logs.length).toBeLessThan(12);

    await t.stop();

    const d = await createTestLoom({ jobs: [Chatty] });
    const { id: many } = await d.enqueue(Chatty, { n: DEFAULT_JOB_LOG_LINES + 20 });
    await d.runUntilIdle();
    const lines = (await d.jobs.get(many))!.logs!;
    expect(lines).toHaveLength(DEFAULT_JOB_LOG_LINES);
    expect(lines[0]!.msg).toBe('line 21');
    await d.stop();
  });

  it('writes a running job’s lines within LOG_FLUSH_MS, in one write, and the rest with its completion', async () => {
    const { store, appends, completed } = countingStore();
    const t = await createTestLoom({ jobs: [Long], store });
    const { id } = await t.enqueue(Long, {});
    await t.settle();
    expect((await t.jobs.get(id))?.logs).toBeUndefined();
    await t.advance(LOG_FLUSH_MS);
    expect((await t.jobs.get(id))?.logs?.map((l) => [l.level, l.msg])).toEqual([
      ['info', 'started'],
      ['debug', 'working'],
    ]);
    expect(appends).toEqual([2]);
    release!();
    await t.runUntilIdle();
    expect((await t.jobs.get(id))?.logs?.map((l) => l.msg)).toEqual(['started', 'working', 'finishing']);
    expect(appends).toEqual([2]);
    expect(completed).toEqual([1]);
    await t.stop();
  });

  it('jobs.list does not carry the lines', async () => {
    const t = await createTestLoom({ jobs: [Chatty] });
    await t.enqueue(Chatty, { n: 2 });
    await t.runUntilIdle();
    const page = await t.jobs.list({});
    expect(page.jobs).toHaveLength(1);
    expect(page.jobs[0]).not.toHaveProperty('logs');
    await t.stop();
  });

  it('refuses bad jobLogs caps', async () => {
    for (const jobLogs of [{ lines: 0 }, { lines: 1.5 }, { lines: 1001 }, { bytes: 100 }, { bytes: 2 * 1024 * 1024 }]) {
      await expect(createTestLoom({ jobs: [Chatty], jobLogs })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
  });
});

describe('LogBuffer', () => {
  const at = (ms: number): Date => new Date(Date.UTC(2026, 0, 1) + ms);

  async function claimed(store: MemoryStore, owner: string, now: Date) {
    const [job] = await store.claim({ owner, queues: ['q'], names: ['j'], limit: 1, leaseUntil: new Date(now.getTime() + 1_000), now });
    return job!;
  }

  it('stores nothing once the lease was taken over (fenced), and stops writing', async () => {
    const store = new MemoryStore();
    const clock = new FakeClock(at(0));
    const [{ id }] = await store.enqueue([{ name: 'j', queue: 'q', payload: {}, priority: 0, runAt: at(0), maxAttempts: 3 }], { now: at(0) });
    const first = await claimed(store, 'a', at(0));
    const errors: unknown[] = [];
    let writes = 0;
    const buffer = new LogBuffer({
      clock,
      caps: { lines: 100, bytes: 16384 },
      attempt: 1,
      prior: undefined,
      write: (lines, keep) => {
        writes++;
        return store.appendLogs({ jobId: id, token: first.lease!.token }, lines, clock.now(), keep);
      },
      onError: (err) => errors.push(err),
    });
    buffer.add('info', {}, 'kept', undefined);
    await buffer.flush();
    // The lease ends and another worker takes the job over.
    clock.set(at(2_000));
    const second = await claimed(store, 'b', at(2_000));
    expect(second.id).toBe(id);
    buffer.add('info', {}, 'from the old holder', undefined);
    await buffer.flush();
    expect(errors).toHaveLength(1);
    expect(LoomError.is(errors[0], 'LEASE_LOST')).toBe(true);
    buffer.add('info', {}, 'later', undefined);
    expect(await buffer.drain()).toBeUndefined();
    expect(writes).toBe(2);
    expect((await store.getJob(id))?.logs?.map((l) => l.msg)).toEqual(['kept']);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('counts the tail the job already kept against the caps', async () => {
    const written: [JobLogLine[], number][] = [];
    const prior: JobLogLine[] = [1, 2, 3].map((i) => ({ at: at(i), level: 'info', msg: `old ${i}`, attempt: 1 }));
    const buffer = new LogBuffer({
      clock: new FakeClock(at(10)),
      caps: { lines: 4, bytes: 16384 },
      attempt: 2,
      prior,
      write: async (lines, keep) => void written.push([lines, keep]),
      onError: () => {},
    });
    buffer.add('info', {}, 'new 1', undefined);
    buffer.add('info', {}, 'new 2', undefined);
    await buffer.flush();
    expect(written.map(([lines, keep]) => [lines.map((l) => l.msg), keep])).toEqual([[['new 1', 'new 2'], 4]]);
    for (let i = 3; i <= 7; i++) buffer.add('info', {}, `new ${i}`, undefined);
    const rest = await buffer.drain();
    // Only the last 4 of the 5 buffered lines are handed over: the first would be dropped at once.
    expect([rest?.lines.map((l) => l.msg), rest?.keep]).toEqual([['new 4', 'new 5', 'new 6', 'new 7'], 4]);
    buffer.add('info', {}, 'after the handler returned', undefined);
    await buffer.send(rest);
    expect(written.map(([lines]) => lines.length)).toEqual([2, 4]);
  });

  it('turns logged objects into JSON fields, cutting large ones', () => {
    expect(toFields({ a: 1, d: new Date(at(0)), f: () => 1, b: 10n })).toEqual({ a: 1, d: at(0).toISOString(), b: '10' });
    expect(toFields({})).toBeUndefined();
    expect(toFields({ big: 'x'.repeat(5000) })).toEqual({ truncated: expect.stringMatching(/^\{"big":"x+…$/) });
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    expect(toFields(loop)).toEqual({ unserializable: true });
  });
});
