import 'reflect-metadata';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { Job, LoomError, MemoryStore, type JobContext } from '@loom/core';
import { createTestLoom, FakeClock, type TestLoom } from '@loom/testing';
import { loomDashboard, type DashboardOptions, type LoomDashboard } from '../src/index.js';

/** A payload that would run if the dashboard put it in the page as markup. */
export const SCRIPT_PAYLOAD = '<script>window.__pwned = true</script><img src=x onerror="window.__pwned = true">';

@Job({ name: 'send-receipt', queue: 'emails', retries: 2 })
export class SendReceipt {
  async run(payload: { orderId: string; email: string }, ctx: JobContext): Promise<{ sent: boolean }> {
    await ctx.progress(1);
    return { sent: payload.email.includes('@') };
  }
}

@Job({ name: 'flaky-webhook', queue: 'webhooks', retries: 1, backoff: { type: 'fixed', delay: '1s' } })
export class FlakyWebhook {
  async run(payload: { url: string }, ctx: JobContext): Promise<void> {
    ctx.log.debug({ attempt: ctx.attempt }, 'resolving the hook');
    ctx.log.info({ url: payload.url, bytes: 512 }, `POST ${payload.url}`);
    ctx.log.warn(
      { status: 502, body: '<script>window.__pwned = true</script>' },
      'the hook answered 502 <b>Bad Gateway</b>; a very long explanation follows so that the line has to wrap on a small screen',
    );
    ctx.log.error({ err: new Error('502 Bad Gateway') }, 'giving up on this attempt');
    throw new Error(`<b>502</b> from ${payload.url}: <script>window.__pwned = true</script>`);
  }
}

@Job({ name: 'fulfill-order', queue: 'fulfillment' })
export class FulfillOrder {
  async run(payload: { orderId: string }, ctx: JobContext): Promise<void> {
    await ctx.step('reserve-stock', async () => ({ reserved: 2 }));
    await ctx.step('charge <card>', async () => ({ chargeId: `ch_${payload.orderId}` }));
    await ctx.enqueue(SendReceipt, { orderId: payload.orderId, email: 'child@example.com' });
    await ctx.progress({ stage: 'waiting for pickup', note: '<i>not markup</i>' });
    await ctx.sleep('wait-for-pickup', '1h');
    await ctx.step('ship', async () => true);
  }
}

@Job({ name: 'nightly-report', queue: 'reports', schedule: { cron: '0 3 * * *', timezone: 'UTC' } })
export class NightlyReport {
  async run(): Promise<void> {}
}

@Job({ name: 'import-batch', queue: 'imports', retries: 0 })
export class ImportBatch {
  async run(payload: { batch: number; fail?: boolean }): Promise<void> {
    if (payload.fail) throw new Error(`batch ${payload.batch} has a malformed row`);
  }
}

/** The fixture's clock, for jobs whose steps take time (a step advances it as a real step would take it). */
let stepClock: FakeClock | undefined;
const take = (ms: number) => stepClock?.advance(ms);

/** Short steps around a 30-minute sleep, each taking a few milliseconds. */
@Job({ name: 'nightly-import', queue: 'workflows', retries: 1 })
export class NightlyImport {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    await ctx.step('download', async () => take(20));
    await ctx.step('parse', async () => take(50));
    await ctx.sleep('cool-down', '30m');
    await ctx.step('publish', async () => take(30));
  }
}

/** A workflow whose second step always throws: with no retry it dies on it. */
@Job({ name: 'charge-card', queue: 'workflows', retries: 0 })
export class ChargeCard {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    await ctx.step('validate', async () => take(5));
    await ctx.step('charge', async () => {
      throw new Error('card declined');
    });
  }
}

/** Waits (with a 1-hour timeout) for a child that finishes at once. */
@Job({ name: 'await-receipt', queue: 'workflows', retries: 1 })
export class AwaitReceipt {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    const child = await ctx.enqueue(SendReceipt, { orderId: 'o-wait', email: 'wait@example.com' });
    await ctx.waitForJob(child.id, { step: 'receipt-sent', timeout: '1h' });
    await ctx.step('archive', async () => true);
  }
}

/** Waits for a signal that does not come. */
@Job({ name: 'await-approval', queue: 'workflows' })
export class AwaitApproval {
  async run(_: undefined, ctx: JobContext): Promise<void> {
    await ctx.waitForSignal('approval', { step: 'approval' });
  }
}

/** One start an hour: a second job waits for the window (`heldBy: 'rateLimit'`). */
@Job({ name: 'sync-crm', queue: 'crm', rateLimit: { limit: 1, per: '1h' } })
export class SyncCrm {
  async run(): Promise<void> {}
}

/** What a reviewer sends to approve a refund (the token's schema). */
export const RefundDecision = z.object({ approved: z.boolean(), note: z.string().optional() });

/** Waits (3 days at most) for a person to approve a refund through a wait token. */
@Job({ name: 'review-refund', queue: 'refunds', retries: 0 })
export class ReviewRefund {
  async run(payload: { orderId: string; amount: number }, ctx: JobContext): Promise<unknown> {
    await ctx.step('check-order', async () => take(5));
    const token = await ctx.step('approval-token', () => ctx.createWaitToken({ timeout: '3d', schema: RefundDecision }));
    try {
      const decision = await ctx.waitForToken(token);
      return await ctx.step('refund', async () => ({ refunded: decision.approved, amount: payload.amount }));
    } catch (err) {
      if (LoomError.is(err, 'TOKEN_REJECTED')) return { refunded: false, reason: err.message };
      throw err;
    }
  }
}

/** A job whose name holds markup: pages that name it must show it as text. */
@Job({ name: 'build <b>report</b>', queue: 'reports', retries: 0 })
export class BuildReport {
  async run(): Promise<void> {}
}

/** What a batch's end enqueues. */
@Job({ name: 'imports-done', queue: 'imports', retries: 0 })
export class ImportsDone {
  async run(): Promise<void> {}
}

export const DEMO_JOBS = [
  SendReceipt,
  FlakyWebhook,
  FulfillOrder,
  NightlyReport,
  ImportBatch,
  NightlyImport,
  ChargeCard,
  AwaitReceipt,
  AwaitApproval,
  SyncCrm,
  ReviewRefund,
];

/** An hour of imports before the fixture's "now" (12:00): a few every 5 minutes, some failing. */
async function importHistory(t: TestLoom): Promise<void> {
  for (let slot = 0; slot < 12; slot++) {
    const n = [3, 5, 8, 6, 9, 12, 7, 4, 10, 14, 11, 6][slot]!;
    for (let i = 0; i < n; i++) await t.enqueue(ImportBatch, { batch: slot * 100 + i, fail: (slot === 4 && i < 3) || (slot === 9 && i < 2) });
    await t.advance('5m');
  }
}

/** A running dashboard over a MemoryStore with demo jobs in every state worth showing. */
export interface DashboardFixture {
  t: TestLoom;
  store: MemoryStore;
  clock: FakeClock;
  dashboard: LoomDashboard;
  server: Server;
  url: string;
  /** Ids of interesting jobs. */
  ids: { scriptPayload: string; dead: string[]; workflow: string; completed: string };
  /** With `flows`: the jobs of a dependency graph and a batch (see {@link addFlows}). */
  flows: { met: string; unmet: string; report: string; batch: string; members: string[]; failedMember: string } | undefined;
  /** With `workflows`: the extra workflow jobs (see {@link addWorkflows}). */
  workflows: { finished: string; sleeping: string; failed: string; awaited: string; approval: string; rateLimited: string; review: string } | undefined;
  close(): Promise<void>;
}

/** How a test hosts the dashboard: a server (listening or not) and how to stop the host. */
export type Mount = (dashboard: LoomDashboard) => Promise<{ server: Server; close?: () => Promise<void> }>;

/**
 * Workflows in the states the timeline has to draw: one finished after a 30-minute sleep, one
 * asleep, one dead on a failing step, one that waited for its child (with a timeout), one waiting
 * for a signal, one waiting for a person to approve it (a wait token). Time moves 31 minutes.
 */
async function addWorkflows(t: TestLoom): Promise<NonNullable<DashboardFixture['workflows']>> {
  const finished = await t.enqueue(NightlyImport, undefined);
  const failed = await t.enqueue(ChargeCard, undefined);
  const awaited = await t.enqueue(AwaitReceipt, undefined);
  const approval = await t.enqueue(AwaitApproval, undefined);
  const review = await t.enqueue(ReviewRefund, { orderId: 'o-refund', amount: 4200 });
  await t.runUntilIdle();
  await t.advance('29m');
  const sleeping = await t.enqueue(NightlyImport, undefined);
  await t.runUntilIdle();
  await t.advance('2m');
  await t.enqueue(SyncCrm, undefined);
  await t.runUntilIdle();
  const rateLimited = await t.enqueue(SyncCrm, undefined);
  await t.runUntilIdle();
  return {
    finished: finished.id,
    sleeping: sleeping.id,
    failed: failed.id,
    awaited: awaited.id,
    approval: approval.id,
    rateLimited: rateLimited.id,
    review: review.id,
  };
}

/**
 * A dependency graph and a batch: `report` (a name holding markup) depends on `met` (completed)
 * and `unmet` (queued an hour ahead), so it waits with one of two unmet; a batch of three imports
 * where one dies, whose end enqueued its `complete` and `failure` callbacks.
 */
async function addFlows(t: TestLoom): Promise<NonNullable<DashboardFixture['flows']>> {
  const met = await t.enqueue(ImportBatch, { batch: 700 });
  const unmet = await t.enqueue(ImportBatch, { batch: 701 }, { delay: '1h' });
  const report = await t.enqueue(BuildReport, undefined, { dependsOn: [met.id, unmet.id], onDependencyFailure: 'cancel' });
  const batch = await t.batches.create({
    jobs: [
      { job: ImportBatch, payload: { batch: 800 } },
      { job: ImportBatch, payload: { batch: 801, fail: true } },
      { job: ImportBatch, payload: { batch: 802 } },
    ],
    onComplete: { job: ImportsDone },
    onFailure: { job: ImportsDone },
  });
  await t.runUntilIdle();
  return { met: met.id, unmet: unmet.id, report: report.id, batch: batch.id, members: batch.jobIds, failedMember: batch.jobIds[1]! };
}

export async function startFixture(
  options: Partial<DashboardOptions> & { mount?: Mount; history?: boolean; workflows?: boolean; flows?: boolean } = {},
): Promise<DashboardFixture> {
  const clock = new FakeClock(options.history ? '2026-03-10T11:00:00Z' : '2026-03-10T12:00:00Z');
  const store = new MemoryStore();
  // The engine records its presence (the Workers page) once a minute: few steps for `advance`.
  const t = await createTestLoom({
    jobs: [...(options.workflows ? DEMO_JOBS : DEMO_JOBS.slice(0, 5)), ...(options.flows ? [BuildReport, ImportsDone] : [])],
    store,
    clock,
    owner: 'fixture-engine',
    presenceInterval: '1m',
  });
  stepClock = clock;
  if (options.history) await importHistory(t);
  const workflows = options.workflows ? await addWorkflows(t) : undefined;
  const flows = options.flows ? await addFlows(t) : undefined;
  const receipts = [];
  for (let i = 1; i <= 3; i++) receipts.push(await t.enqueue(SendReceipt, { orderId: `o-${i}`, email: `buyer${i}@example.com` }));
  const scriptPayload = await t.enqueue(SendReceipt, { orderId: 'o-xss', email: SCRIPT_PAYLOAD });
  const dead = [await t.enqueue(FlakyWebhook, { url: 'https://hooks.example/down' }), await t.enqueue(FlakyWebhook, { url: 'https://hooks.example/flaky' })];
  const workflow = await t.enqueue(FulfillOrder, { orderId: 'o-1' });
  await t.advance('2s');
  // Queued work that is not due yet, so the queued column has something.
  await t.enqueue(SendReceipt, { orderId: 'o-later', email: 'later@example.com' }, { delay: '10m' });
  // Engines of Loom 0.2 describe their schedules to the store; make sure this one is.
  if (!(await store.listSchedules()).some((s) => s.description)) {
    await store.describeSchedule(
      'nightly-report',
      { cron: '0 3 * * *', timezone: 'UTC', job: { queue: 'reports', payload: undefined, priority: 0, maxAttempts: 4 } },
      clock.now(),
    );
  }
  const { mount, history: _history, workflows: _workflows, flows: _flows, ...dashboardOptions } = options;
  const dashboard = loomDashboard({ store, clock, basePath: '/loom', refreshInterval: 100, authorize: () => true, ...dashboardOptions });
  const host = mount ? await mount(dashboard) : { server: createServer(dashboard) };
  const { server } = host;
  if (!server.listening) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    t,
    store,
    clock,
    dashboard,
    server,
    url,
    ids: { scriptPayload: scriptPayload.id, dead: dead.map((d) => d.id), workflow: workflow.id, completed: receipts[0]!.id },
    workflows,
    flows,
    async close() {
      dashboard.close();
      server.closeAllConnections();
      if (host.close) await host.close();
      else await new Promise<void>((resolve) => server.close(() => resolve()));
      await t.stop();
    },
  };
}
