// Times every dashboard page over 10,000 jobs (issue 34: each under 300 ms on this machine), on a
// MemoryStore and on a MongoStore (MONGODB_URI, else the test MongoDB of @loom/testing/mongo).
// Run after `npm run build`:  node packages/dashboard/scripts/measure-pages.mjs [jobs]
// Prints the median of 5 loads per page, in ms. A script, not a timed test: timings here vary.
import { createServer } from 'node:http';
import { MemoryStore } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import { startTestMongo } from '@loom/testing/mongo';
import { loomDashboard } from '@loom/dashboard';

const JOBS = Number(process.argv[2] ?? 10_000);
const NAMES = ['send-receipt', 'resize-image', 'sync-crm', 'charge-card', 'import-batch'];
const STATUSES = ['queued', 'completed', 'completed', 'completed', 'dead', 'waiting'];

async function fill(store) {
  const base = Date.parse('2026-12-01T00:00:00Z');
  const batch = [];
  for (let i = 0; i < JOBS; i++) {
    batch.push({
      name: NAMES[i % NAMES.length],
      queue: `q${i % 13}`,
      payload: { orderId: `o-${i}`, tenant: `t-${i % 50}`, n: i },
      priority: 0,
      runAt: new Date(base + i * 1000),
      maxAttempts: 3,
      idempotencyKey: `key-${i}`,
    });
  }
  const ids = [];
  for (let i = 0; i < batch.length; i += 1000) {
    const now = new Date(base + i * 1000);
    ids.push(...(await store.enqueue(batch.slice(i, i + 1000), { now })).map((r) => r.id));
  }
  // Move some into other states through the store's own transitions.
  const now = new Date(base + JOBS * 1000 + 60_000);
  for (let round = 0; round < 20; round++) {
    const claimed = await store.claim({
      names: NAMES,
      queues: Array.from({ length: 13 }, (_, i) => `q${i}`),
      limit: 100,
      leaseUntil: new Date(now.getTime() + 60_000),
      now,
      owner: 'measure',
    });
    for (const [k, job] of claimed.entries()) {
      const lease = { jobId: job.id, token: job.lease.token };
      const status = STATUSES[k % STATUSES.length];
      if (status === 'completed') await store.complete(lease, { now });
      else if (status === 'dead') await store.deadLetter(lease, { reason: 'boom', now });
      else if (status === 'waiting') await store.wait(lease, { for: { signal: 'go' }, now });
      else await store.sleep(lease, { runAt: new Date(now.getTime() + 3_600_000), now });
    }
  }
  return ids;
}

async function time(url) {
  const runs = [];
  for (let i = 0; i < 6; i++) {
    const start = performance.now();
    const res = await fetch(url, { redirect: 'manual' });
    await res.text();
    if (res.status >= 400) throw new Error(`${url}: ${res.status}`);
    if (i > 0) runs.push(performance.now() - start);
  }
  runs.sort((a, b) => a - b);
  return runs[Math.floor(runs.length / 2)];
}

async function measure(label, store) {
  await store.init();
  const ids = await fill(store);
  const dashboard = loomDashboard({ store, basePath: '/loom', authorize: () => true, logger: { debug() {}, info() {}, warn() {}, error: console.error } });
  const server = createServer(dashboard);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}/loom`;
  const pages = {
    overview: '/',
    jobs: '/jobs',
    'jobs by status': '/jobs?status=queued',
    'jobs by name': '/jobs?name=sync-crm',
    'jobs by key': '/jobs?key=key-5000',
    'jump to id': `/jobs?id=${ids[5000]}`,
    'payload (common)': '/jobs?payload=tenant%3Dt-7',
    'payload (one match, whole range)': '/jobs?payload=orderId%3Do-17',
    'one job': `/jobs/${ids[5000]}`,
    'dead letters': '/jobs?status=dead',
    schedules: '/schedules',
    ...(globalThis.EXTRA_PAGES ?? {}),
  };
  const out = [];
  for (const [name, path] of Object.entries(pages)) out.push(`${label.padEnd(10)} ${name.padEnd(34)} ${(await time(base + path)).toFixed(1).padStart(7)} ms`);
  console.log(out.join('\n'));
  dashboard.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await store.close();
}

await measure('memory', new MemoryStore());
const mongo = process.env.MONGODB_URI ? undefined : await startTestMongo();
try {
  const url = process.env.MONGODB_URI ?? mongo.uri;
  await measure(mongo ? 'emulator' : 'mongod', new MongoStore({ url, database: `measure_${Date.now()}`, retention: { completed: false } }));
} finally {
  await mongo?.stop();
}
