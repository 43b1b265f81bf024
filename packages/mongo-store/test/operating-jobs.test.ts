import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Job, type JobContext } from '@loom/core';
import { createTestLoom, FakeClock } from '@loom/testing';
import { useMongoFixture } from './fixture.js';

// The engine side of issue 14 on MongoDB: a cancel or a pause made by one instance reaches the
// instance running the jobs through the store alone (the same scenarios run on MemoryStore in
// packages/core/test/operating-jobs.test.ts). Retention is off: fake-clock times are in the past.
const mongo = useMongoFixture();

let abortedWith: unknown;
const ran: string[] = [];

@Job({ name: 'mongo-slow', queue: 'work' })
class MongoSlow {
  async run(_: unknown, ctx: JobContext): Promise<void> {
    await new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject((abortedWith = ctx.signal.reason as unknown))));
  }
}

@Job({ name: 'mongo-send', queue: 'emails' })
class MongoSend {
  async run(p: { to: string }): Promise<void> {
    ran.push(p.to);
  }
}

@Job({ name: 'mongo-parent', queue: 'work' })
class MongoParent {
  async run(_: unknown, ctx: JobContext): Promise<string> {
    const child = await ctx.enqueue(MongoSend, { to: 'child' }, { delay: '1h' });
    try {
      await ctx.waitForJob(child.id);
      return 'done';
    } catch (err) {
      return (err as { code?: string }).code ?? 'other';
    }
  }
}

const JOBS = [MongoSlow, MongoSend, MongoParent];

async function twoInstances() {
  const database = mongo.mongo.newDatabaseName('ops');
  const clock = new FakeClock();
  const store = mongo.newStore({ database, retention: { completed: false } });
  const runner = await createTestLoom({ jobs: JOBS, store, clock, lease: '30s', pollInterval: '1s' });
  const operator = await createTestLoom({ jobs: JOBS, store: mongo.newStore({ database, retention: { completed: false } }), clock, start: false });
  return { runner, operator };
}

describe('operating jobs on MongoStore, across instances', () => {
  it('a cancel made by another instance aborts the run within one heartbeat and ends the job cancelled', async () => {
    abortedWith = undefined;
    const { runner, operator } = await twoInstances();
    const { id } = await runner.enqueue(MongoSlow);
    await runner.settle();
    expect(await operator.jobs.cancel(id, { reason: 'ops' })).toEqual({ cancelled: true, status: 'running' });
    await runner.advance('10s');
    expect(abortedWith).toMatchObject({ code: 'CANCELLED' });
    expect(await operator.jobs.get(id)).toMatchObject({ status: 'cancelled', cancelReason: 'ops' });
    await runner.stop();
  });

  it('a pause made by another instance stops claims within one poll interval; resume lets them run', async () => {
    ran.length = 0;
    const { runner, operator } = await twoInstances();
    await operator.queues.pause('emails');
    await runner.advance('1s');
    await runner.enqueue(MongoSend, { to: 'held' });
    await runner.advance('3s');
    expect(ran).toEqual([]);
    await operator.queues.resume('emails');
    await runner.advance('1s');
    expect(ran).toEqual(['held']);
    await runner.stop();
  });

  it("a cancelled child fails its parent's waitForJob with CHILD_CANCELLED", async () => {
    const { runner, operator } = await twoInstances();
    const { id: parentId } = await runner.enqueue(MongoParent);
    await runner.runUntilIdle();
    const [child] = (await operator.jobs.list({ name: 'mongo-send' })).jobs;
    await operator.jobs.cancel(child.id);
    await runner.runUntilIdle();
    expect(await runner.getJob(parentId)).toMatchObject({ status: 'completed', result: 'CHILD_CANCELLED' });
    await runner.stop();
  });
});
