import 'reflect-metadata';
import { afterEach, expect, test } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Job, LoomError, MemoryStore, type JobContext } from '@loom/core';
import { createTestLoom, FakeClock, type TestLoom } from '@loom/testing';
import { loomDashboard, type LoomDashboard } from '../src/index.js';
import { Visitor } from './http-client.js';

// The dashboard's actions are core's operations (`Jobs`, `Queues`, `DeadLetters`, stored
// schedules), so they do what `loom.jobs.*` does, side effects included.

@Job({ name: 'notify', queue: 'emails' })
class Notify {
  async run(): Promise<void> {}
}

@Job({ name: 'await-notify', queue: 'work' })
class AwaitNotify {
  async run(_: unknown, ctx: JobContext): Promise<string> {
    const child = await ctx.enqueue(Notify, {}, { delay: '1h' });
    try {
      await ctx.waitForJob(child.id);
      return 'child done';
    } catch (err) {
      return LoomError.is(err) ? err.code : 'other';
    }
  }
}

let t: TestLoom | undefined;
let dashboard: LoomDashboard | undefined;
let server: Server | undefined;
afterEach(async () => {
  dashboard?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await t?.stop();
  t = dashboard = server = undefined;
});

test('cancelling a child from the dashboard wakes the parent waiting for it, as loom.jobs.cancel does', async () => {
  const store = new MemoryStore();
  const clock = new FakeClock('2026-03-10T12:00:00Z');
  t = await createTestLoom({ jobs: [Notify, AwaitNotify], store, clock });
  dashboard = loomDashboard({ store, clock, basePath: '/loom', authorize: () => true });
  server = createServer(dashboard);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const v = new Visitor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);

  const { id: parentId } = await t.enqueue(AwaitNotify, {});
  await t.runUntilIdle();
  expect(await store.getJob(parentId)).toMatchObject({ status: 'waiting' });
  const [child] = await store.listJobs({ parentId });
  expect(child).toMatchObject({ status: 'queued' });

  await v.page(`/loom/jobs/${child!.id}`);
  expect((await v.post(`/loom/actions/jobs/${child!.id}/cancel`)).status).toBe(303);
  expect(await store.getJob(child!.id)).toMatchObject({ status: 'cancelled' });
  // Woken at once (no time passes here), not when it would look at its children again minutes later.
  await t.runUntilIdle();
  expect(await store.getJob(parentId)).toMatchObject({ status: 'completed', result: 'CHILD_CANCELLED' });
});
