import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'puppeteer-core';
import { Job, MemoryStore, plainDataSize, type JobPageQuery, type JobRecord, type JobStore, type JobSummary } from '@loom/core';
import { createTestLoom, FakeClock, type TestLoom } from '@loom/testing';
import { loomDashboard, type LoomDashboard } from '@loom/dashboard';
import { axeProblems, launchChromium, screenshot, watchedPage } from './chromium.js';
import { Visitor } from './http-client.js';

// Issue 33, item 4: a payload or result the store keeps outside the job's record (MongoStore over
// its offloadThreshold) shows its size on the job page with a download link, and its size in the
// lists, which never load it. The store here is a MemoryStore that reports values over 1 KiB as
// offloaded, as the JobStore contract says a store that offloads does (conformance/payloads.ts):
// lists leave the value out and give its reference, getJob returns it whole.

const THRESHOLD = 1024;

/** A MemoryStore that reports values over {@link THRESHOLD} bytes as kept outside the record. */
function offloadingStore(): JobStore {
  const inner = new MemoryStore();
  const offloaded = (value: unknown, id: string, kind: string) => {
    const size = value === undefined ? 0 : (plainDataSize(value) ?? 0);
    return size > THRESHOLD ? { fileId: `${id}-${kind}`, size } : undefined;
  };
  const mark = (job: JobRecord, values: boolean): JobRecord => {
    const payload = offloaded(job.payload, job.id, 'payload');
    const result = offloaded(job.result, job.id, 'result');
    const marked: JobRecord = { ...job };
    if (payload) Object.assign(marked, { offloadedPayload: payload }, values ? {} : { payload: undefined });
    if (result) Object.assign(marked, { offloadedResult: result }, values ? {} : { result: undefined });
    return marked;
  };
  return new Proxy(inner, {
    get(target, key) {
      if (key === 'getJob')
        return async (id: string, opts?: { values?: boolean }) => {
          const job = await target.getJob(id);
          return job && mark(job, opts?.values !== false);
        };
      if (key === 'listJobs') return async (filter: Parameters<JobStore['listJobs']>[0]) => (await target.listJobs(filter)).map((j) => mark(j, false));
      if (key === 'listJobPage')
        return async (query: JobPageQuery): Promise<JobSummary[]> => {
          const page = await target.listJobPage(query);
          return Promise.all(
            page.map(async (summary) => {
              const job = await target.getJob(summary.id);
              const payload = job && offloaded(job.payload, job.id, 'payload');
              const result = job && offloaded(job.result, job.id, 'result');
              return { ...summary, ...(payload ? { payloadSize: payload.size } : {}), ...(result ? { resultSize: result.size } : {}) };
            }),
          );
        };
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

const REPORT = {
  title: 'Q3 <script>window.__pwned = true</script>',
  rows: Array.from({ length: 300 }, (_, i) => ({ i, sku: `sku-${i}`, at: new Date(Date.UTC(2026, 2, 1, 0, i)) })),
};

@Job({ name: 'export-report', queue: 'reports' })
class ExportReport {
  async run(payload: typeof REPORT): Promise<{ lines: string[] }> {
    return { lines: payload.rows.map((r) => `${r.sku};${r.i}`) };
  }
}

@Job({ name: 'ping', queue: 'reports' })
class Ping {
  async run(): Promise<void> {}
}

let t: TestLoom;
let dashboard: LoomDashboard;
let server: Server;
let url: string;
let bigId: string;
let smallId: string;

beforeAll(async () => {
  const clock = new FakeClock('2026-03-10T12:00:00Z');
  const store = offloadingStore();
  t = await createTestLoom({ jobs: [ExportReport, Ping], store, clock });
  bigId = (await t.enqueue(ExportReport, REPORT)).id;
  smallId = (await t.enqueue(Ping, undefined)).id;
  await t.runUntilIdle();
  dashboard = loomDashboard({ store, clock, basePath: '/loom', refreshInterval: 100 });
  server = createServer(dashboard);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  dashboard?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await t?.stop();
});

describe('offloaded payloads and results on the dashboard', () => {
  test('the job page gives their sizes and download links; the values are escaped', async () => {
    const page = (await new Visitor(url).get(`/loom/jobs/${bigId}`)).text;
    const size = plainDataSize(REPORT)!;
    expect(size).toBeGreaterThan(THRESHOLD);
    const shown = `${(size / 1024).toFixed(size < 10 * 1024 ? 1 : 0)} KiB`;
    expect(page).toContain(`<dt>Payload size</dt><dd><span data-test="payload-size">${shown}</span></dd>`);
    expect(page).toContain('<dt>Result size</dt>');
    expect(page).toContain(`<h2>Payload (${shown})</h2>`);
    expect(page).toContain(`href="/loom/jobs/${bigId}/payload.json" download>Download JSON</a>`);
    expect(page).toContain(`href="/loom/jobs/${bigId}/result.json" download>Download JSON</a>`);
    expect(page).toContain('Q3 &lt;script&gt;window.__pwned = true&lt;/script&gt;');
    expect(page).not.toContain('<script>window.__pwned');
    // A small job has neither.
    const small = (await new Visitor(url).get(`/loom/jobs/${smallId}`)).text;
    expect(small).not.toContain('Payload size');
    expect(small).not.toContain('Download JSON');
    // Enqueued without a payload: the panel says so (it printed "undefined").
    expect(small).toContain('<p class="muted" data-test="payload-none">No payload.</p>');
    expect(small).not.toContain('>undefined</pre>');
  });

  test('the jobs list shows the sizes it has, never the values', async () => {
    const page = (await new Visitor(url).get('/loom/jobs')).text;
    const row = page.slice(page.indexOf(`<tr data-job="${bigId}">`));
    expect(row.slice(0, row.indexOf('</tr>'))).toMatch(
      /<div class="sub" data-test="value-size">payload [\d.]+ KiB<\/div><div class="sub" data-test="value-size">result [\d.]+ KiB<\/div>/,
    );
    expect(page).not.toContain('sku-299');
  });

  test('the download route sends the value as a JSON file, read-only; unknown jobs and missing values are 404', async () => {
    const visitor = new Visitor(url);
    const payload = await visitor.get(`/loom/jobs/${bigId}/payload.json`);
    expect(payload.status).toBe(200);
    expect(payload.res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(payload.res.headers.get('content-disposition')).toBe(`attachment; filename="${bigId.replace(/[^A-Za-z0-9_-]/g, '_')}-payload.json"`);
    expect(payload.res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(JSON.parse(payload.text)).toEqual(JSON.parse(JSON.stringify(REPORT)));
    const result = await visitor.get(`/loom/jobs/${bigId}/result.json`);
    expect((JSON.parse(result.text) as { lines: string[] }).lines).toHaveLength(300);

    const unknown = await visitor.get('/loom/jobs/no-such-job/payload.json');
    expect(unknown.status).toBe(404);
    expect(unknown.res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect((await visitor.get(`/loom/jobs/${smallId}/result.json`)).status).toBe(404); // it returned nothing
    expect((await visitor.get('/loom/jobs/%E0%A4%A/payload.json')).status).toBe(400);
    const head = await fetch(`${url}/loom/jobs/${bigId}/payload.json`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get('content-length'))).toBe(Buffer.byteLength(payload.text));
    const post = await fetch(`${url}/loom/jobs/${bigId}/payload.json`, { method: 'POST' });
    expect(post.status).toBe(405);
  });
});

describe('in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  test.each([1280, 390])('the job page and the list fit %i px and pass axe-core (screenshots job-offloaded-*, jobs-offloaded-*)', async (width) => {
    const { page, problems } = await watchedPage(browser);
    await page.setViewport({ width, height: 800 });
    for (const [name, path] of [
      ['job-offloaded', `/loom/jobs/${bigId}`],
      ['jobs-offloaded', '/loom/jobs'],
    ] as const) {
      expect((await page.goto(`${url}${path}`))?.status()).toBe(200);
      await screenshot(page, `${name}-${width}`);
      const scrollWidth = await page.evaluate(
        () => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth,
      );
      expect({ name, scrollWidth }).toEqual({ name, scrollWidth: width });
      expect({ name, violations: await axeProblems(page) }).toEqual({ name, violations: [] });
    }
    await page.close();
    expect(problems).toEqual([]);
  });
});
