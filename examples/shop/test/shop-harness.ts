import type { Container } from 'inversify';
import { createTestLoom, CaptureLogger, FakeClock, type TestLoom } from '@loom/testing';
import type { TestMongo } from '@loom/testing/mongo';
import type { JobRecord } from '@loom/core';
import type { ShopConfig } from '../src/config.js';
import { ShopApp } from '../src/shop-app.js';

/** The settings the e2e tests run the shop with: time only moves when a test moves the FakeClock. */
export const TEST_CONFIG: Omit<ShopConfig, 'database'> = {
  port: 0,
  pickupDelay: '1h',
  webhookRetryAfter: '1s',
  concurrency: 10,
  shutdownGrace: '5s',
  pollInterval: '1m',
  // MongoDB's TTL monitor deletes on the server's wall clock, while these tests run on a FakeClock
  // months in the past: with retention on, a completed job would vanish at the next TTL pass and a
  // repeated POST would enqueue a second receipt job.
  retention: { completed: false, dead: false },
};

/**
 * A JSON answer of the shop's API as the tests read it: each route fills some of these fields (a
 * placed order: `jobId` and `jobs`, by job; a job: `status`; a refusal: `error`), and a test reads
 * those of the route it called.
 */
export interface ShopAnswer {
  jobId: string;
  status: string;
  jobs: Record<string, string>;
  error: { code: string; message: string; details?: unknown };
  [field: string]: unknown;
}

/** The shop booted in process on the test MongoDB, on a FakeClock, with its HTTP API listening. */
export interface ShopUnderTest {
  app: ShopApp;
  /** The engine's test handle: `t.advance('1h')` moves time through due retries and sleeps. */
  t: TestLoom;
  clock: FakeClock;
  logs: CaptureLogger;
  url: string;
  post(path: string, body?: unknown): Promise<{ status: number; body: ShopAnswer }>;
  get(path: string): Promise<{ status: number; body: ShopAnswer }>;
  job(id: string): Promise<JobRecord | null>;
  /** {@link waitFor}, letting the engine claim what is due between checks (time does not move). */
  until<T>(what: string, condition: () => Promise<T | undefined | null | false> | T | undefined | null | false): Promise<T>;
}

/**
 * Boots the shop through its real composition root, with a FakeClock and `createTestLoom` as the
 * engine factory. Pass the same `database` (and a clock at the right time) to restart it.
 */
export async function startShop(
  mongo: TestMongo,
  options: { database?: string; clock?: FakeClock; overrides?: (container: Container) => void; durable?: boolean } = {},
): Promise<ShopUnderTest> {
  const clock = options.clock ?? new FakeClock('2026-03-10T12:00:00Z');
  const logs = new CaptureLogger();
  let t: TestLoom | undefined;
  const app = await ShopApp.create({
    client: mongo.client,
    config: { ...TEST_CONFIG, database: options.database ?? mongo.newDatabaseName('shop') },
    clock,
    logger: logs,
    overrides: options.overrides,
    durable: options.durable,
    createLoom: async (loomOptions) => {
      t = await createTestLoom({ ...loomOptions, jobs: loomOptions.jobs ?? [], clock, start: false });
      return t.loom;
    },
  });
  const url = await app.start(0);
  const engine = t!;
  const request = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as ShopAnswer };
  };
  return {
    app,
    t: engine,
    clock,
    logs,
    url,
    post: (path, body) => request('POST', path, body),
    get: (path) => request('GET', path),
    job: (id) => app.loom.getJob(id),
    until: (what, condition) => waitFor(what, condition, { nudge: () => engine.settle() }),
  };
}

/**
 * Waits until `condition` holds, checking it again whenever the event loop is free; fails with
 * `what` after `timeoutMs`. Work that runs over real I/O (HTTP, MongoDB) is waited for this way;
 * time-driven work (retries, sleeps, polls) moves only with the FakeClock, so `nudge` (e.g.
 * `t.settle()`, which claims what is due now) stands in for the poll between checks.
 */
export async function waitFor<T>(
  what: string,
  condition: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  options: { timeoutMs?: number; nudge?: () => Promise<void> } = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (performance.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await options.nudge?.();
  }
}

/** Waits until the job has this status. */
export function waitForStatus(shop: ShopUnderTest, jobId: string, status: JobRecord['status']): Promise<JobRecord> {
  return shop.until(`job ${jobId} to be ${status}`, async () => {
    const job = await shop.job(jobId);
    return job?.status === status ? job : undefined;
  });
}

/** A valid order; override any field. */
export function anOrder(orderId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { orderId, email: `${orderId}@example.com`, items: [{ sku: 'LOOM-MUG', quantity: 2, priceCents: 1200 }], ...extra };
}
