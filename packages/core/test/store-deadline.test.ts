import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, LoomError } from '@loom/core';
import { testHooks } from '@loom/core/internal';
import { createTestLoom, FakeClock } from '@loom/testing';
import { withDeadline } from '../src/support/store-deadline.js';
import { deferred } from './deferred.js';
import { hangingOnCall } from './hanging-store.js';

let runs = 0;
@Job({ name: 'counted' })
class Counted {
  async run(): Promise<void> {
    runs++;
  }
}

describe('store calls that hang', () => {
  it('withDeadline rejects at the deadline and hands a late answer to onLate', async () => {
    const clock = new FakeClock();
    const call = deferred<string>();
    const late: string[] = [];
    const waiting = withDeadline(clock, 'claim', 1_000, call.promise, (v) => late.push(v));
    clock.advance(1_000);
    await expect(waiting).rejects.toThrow('store.claim did not answer within 1000 ms');
    await waiting.catch((err: unknown) => expect(LoomError.is(err, 'STORE_TIMEOUT')).toBe(true));
    call.resolve('jobs');
    await call.promise;
    expect(late).toEqual(['jobs']);
  });

  it('a claim that never answers does not wedge the worker loop', async () => {
    runs = 0;
    const { store: hangsOnce } = hangingOnCall('claim');
    const t = await createTestLoom({ jobs: [Counted], store: hangsOnce, lease: '30s', pollInterval: '1s', start: false, hungStoreCall: '200ms' });
    const errors: string[] = [];
    t.loom.on('worker:error', (e) => errors.push(e.error.message));
    await t.enqueue(Counted);
    await t.loom.start();
    // Move the clock directly: the harness would (rightly) wait for the hanging call first.
    t.clock.advance('30s');
    await t.advance('2s');
    expect(errors).toEqual(['store.claim did not answer within 30000 ms; the engine stopped waiting for it']);
    expect(runs).toBe(1);
    await t.stop();
  });
});

describe('the read of paused queues never answers', () => {
  it('does not wedge the worker loop: claims go on with the last known paused queues', async () => {
    runs = 0;
    // The first read (at start) answers; the next one, made before a claim a poll interval later, never does.
    const { store: hangsOnce } = hangingOnCall('pausedQueues', 2);
    const t = await createTestLoom({ jobs: [Counted], store: hangsOnce, lease: '30s', pollInterval: '1s', hungStoreCall: '200ms' });
    const errors: string[] = [];
    t.loom.on('worker:error', (e) => errors.push(e.error.message));
    // Moving the clock directly: the harness would (rightly) wait for the hanging call first.
    t.clock.advance('1s');
    await t.loom.enqueue(Counted); // the claim it starts reads the paused queues first, a poll interval on
    t.clock.advance('30s');
    await t.advance('2s');
    expect(errors).toEqual(['store.pausedQueues did not answer within 30000 ms; the engine stopped waiting for it']);
    expect(runs).toBe(1);
    await t.enqueue(Counted);
    await t.settle();
    expect(runs).toBe(2);
    await t.stop();
  });
});

describe('settling dependents never answers', () => {
  it('does not wedge the settling: the next dependency to finish still starts its dependent', async () => {
    runs = 0;
    const { store: hangsOnce, calls: settles } = hangingOnCall('settleDependents');
    const t = await createTestLoom({ jobs: [Counted], store: hangsOnce, lease: '30s', pollInterval: '1m', hungStoreCall: '200ms' });
    const first = await t.enqueue(Counted, undefined, { delay: '1s' });
    const firstDependent = await t.enqueue(Counted, undefined, { dependsOn: [first.id] });
    // The first settle (when `first` completes) never answers.
    await t.advance('1s');
    expect(settles()).toBe(1);
    // Moving the clock directly: the harness would (rightly) wait for the hanging call first.
    t.clock.advance('30s');
    const second = await t.enqueue(Counted);
    const secondDependent = await t.enqueue(Counted, undefined, { dependsOn: [second.id] });
    await t.settle();
    expect(await t.getJob(secondDependent.id)).toMatchObject({ status: 'completed' });
    expect(t.logs.map((e) => e.msg)).toContainEqual(expect.stringContaining('store.settleDependents did not answer within 30000 ms'));
    expect(t.logs.map((e) => e.msg)).toContain(`Could not settle the dependents of jobs ${first.id}; this engine tries again within its poll interval`);
    // As after a failed call, the periodic settle (five minutes apart at first) takes what the abandoned one was for.
    await t.advance('5m');
    expect(await t.getJob(firstDependent.id)).toMatchObject({ status: 'completed' });
    expect(runs).toBe(4);
    await t.stop();
  });
});

let minutes = 0;
@Job({ name: 'every-minute', schedule: '* * * * *' })
class EveryMinute {
  async run(): Promise<void> {
    minutes++;
  }
}

describe("a cron tick's store call never answers", () => {
  it('later slots still fire, and stop() returns', async () => {
    minutes = 0;
    // The first tick (at start) reads its schedule; the next one's read never answers.
    const { store: hangsOnce, calls } = hangingOnCall('ensureSchedule', 2);
    const t = await createTestLoom({ jobs: [EveryMinute], store: hangsOnce, lease: '30s', hungStoreCall: '200ms' });
    await t.advance('1m'); // the tick of 00:01 hangs (the harness writes the call off after hungStoreCall)
    expect(calls()).toBe(2);
    // Moving the clock directly: the harness would (rightly) wait for the hanging call first.
    t.clock.advance('30s');
    await t.advance('2m');
    expect(t.logs.filter((e) => e.level === 'error').map((e) => e.msg)).toEqual([
      'schedule every-minute (class EveryMinute): tick failed; retrying on the next tick',
    ]);
    // The next tick (a minute after the failed one) fires 00:02 (00:01 is skipped: catch-up 'latest'), then 00:03.
    expect(minutes).toBe(2);
    await t.stop();
  });
});

describe('an outcome write that never answers', () => {
  it('gives up after the write deadline and frees the worker slot; the job runs again after its lease', async () => {
    runs = 0;
    const { store: hangsOnce } = hangingOnCall('completeMany');
    const t = await createTestLoom({ jobs: [Counted], store: hangsOnce, lease: '30s', concurrency: 1, hungStoreCall: '200ms' });
    const errors: string[] = [];
    t.loom.on('worker:error', (e) => errors.push(e.error.message));
    const { id } = await t.enqueue(Counted);
    await t.settle();
    expect(runs).toBe(1);
    // Move the clock directly: the harness would (rightly) wait for the hanging call first.
    // The write may take what is left of the lease (30 s from the claim): past it, another worker may own the job.
    t.clock.advance('29s');
    expect(testHooks(t.loom).inFlight()).toHaveLength(1);
    t.clock.advance('1s');
    await t.settle();
    expect(errors).toEqual(['store.complete did not answer within 30000 ms; the engine stopped waiting for it']);
    expect(testHooks(t.loom).inFlight()).toHaveLength(0);
    await t.advance('1s');
    expect(runs).toBe(2);
    expect(await t.getJob(id)).toMatchObject({ status: 'completed', attempt: 2 });
    await t.stop();
  });
});
