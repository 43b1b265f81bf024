import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer as createNetServer } from 'node:net';
import { createServer, type Server } from 'node:http';
import { startTestMongo, type TestMongo } from '@loom/testing/mongo';
import { OutboxRepository } from '../src/outbox/outbox-repository.js';
import { startTelemetry, telemetrySettings } from '../src/infra/telemetry.js';
import { anOrder, startShop, type ShopUnderTest } from './shop-harness.js';

let mongo: TestMongo;
beforeAll(async () => {
  mongo = await startTestMongo();
});
afterAll(() => mongo.stop());

/** A span of an OTLP/JSON trace export, as the test reads it. */
interface OtlpSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Array<{ key: string; value: { stringValue?: string } }>;
}

/** An OTLP/JSON export: a trace export (`/v1/traces`) has the spans, a metrics export (`/v1/metrics`) the metrics. */
interface OtlpExport {
  resourceSpans: Array<{ resource: { attributes: unknown[] }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
  resourceMetrics: Array<{ scopeMetrics: Array<{ metrics: Array<{ name: string }> }> }>;
}

/** An OTLP/HTTP collector on a free port that keeps every JSON request it receives. */
async function startCollector(): Promise<{ url: string; received: Array<{ path: string; body: OtlpExport }>; close(): Promise<void> }> {
  const received: Array<{ path: string; body: OtlpExport }> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, received, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Posts an order as a traced client would: with a W3C traceparent header. */
async function postTracedOrder(shop: ShopUnderTest, orderId: string, traceparent: string): Promise<number> {
  const res = await fetch(`${shop.url}/orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent },
    body: JSON.stringify(anOrder(orderId)),
  });
  await res.text();
  return res.status;
}

async function receiptRelayed(shop: ShopUnderTest, orderId: string): Promise<void> {
  const outbox = shop.app.container.get(OutboxRepository);
  await shop.until(`the receipt of ${orderId} to be relayed`, async () => (await outbox.get(`receipt:${orderId}`))?.deliveredAt);
  // The relay run's span ends once its completion is stored, which follows the delivery it made.
  await shop.until('the relay job to complete', async () => (await shop.t.store.listJobs({ name: 'relay-outbox', status: ['completed'] })).length > 0);
}

describe('the shop with OpenTelemetry', () => {
  it('reads its settings from the environment; with none it loads and reports nothing', async () => {
    expect(telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/', PROMETHEUS_PORT: '9464' })).toEqual({
      otlpEndpoint: 'http://collector:4318',
      prometheusPort: 9464,
      metricIntervalMs: 60_000,
      serviceName: 'loom-shop',
    });
    expect(await startTelemetry(telemetrySettings({}))).toBeUndefined();
  });

  it("exports over OTLP one trace from the client's request through the receipt job to the outbox relay it enqueued, and Loom's metrics", async () => {
    const collector = await startCollector();
    const telemetry = (await startTelemetry({ otlpEndpoint: collector.url, metricIntervalMs: 3_600_000, serviceName: 'shop-under-test' }))!;
    const shop = await startShop(mongo);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    try {
      expect(await postTracedOrder(shop, 'otel-1', `00-${traceId}-00f067aa0ba902b7-01`)).toBe(202);
      await receiptRelayed(shop, 'otel-1');
    } finally {
      await telemetry.shutdown(); // flushes spans and metrics to the collector
      await shop.app.stop();
      await collector.close();
    }

    const traces = collector.received.filter((r) => r.path === '/v1/traces').map((r) => r.body);
    const resourceSpans = traces.flatMap((t) => t.resourceSpans);
    expect(resourceSpans[0].resource.attributes).toContainEqual({ key: 'service.name', value: { stringValue: 'shop-under-test' } });
    const spans: OtlpSpan[] = resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
    const named = (name: string) => spans.filter((s) => s.name === name);
    const jobName = (s: (typeof spans)[number]) => s.attributes.find((a) => a.key === 'loom.job.name')?.value.stringValue;

    const [request] = named('POST /orders');
    expect(request).toMatchObject({ traceId, parentSpanId: '00f067aa0ba902b7' });
    const published = named('publish emails');
    const receiptPublish = published.find((s) => jobName(s) === 'send-receipt');
    expect(receiptPublish).toMatchObject({ traceId, parentSpanId: request!.spanId });
    const receiptRun = named('process emails').find((s) => jobName(s) === 'send-receipt');
    expect(receiptRun).toMatchObject({ traceId, parentSpanId: receiptPublish!.spanId });
    // The relay job was enqueued by the receipt job's handler: its publish nests under that run.
    const relayPublish = published.find((s) => jobName(s) === 'relay-outbox');
    expect(relayPublish).toMatchObject({ traceId, parentSpanId: receiptRun!.spanId });
    const relayRun = named('process emails').find((s) => jobName(s) === 'relay-outbox');
    expect(relayRun).toMatchObject({ traceId, parentSpanId: relayPublish!.spanId });

    const metrics = collector.received
      .filter((r) => r.path === '/v1/metrics')
      .flatMap((r) => r.body.resourceMetrics.flatMap((m) => m.scopeMetrics.flatMap((s) => s.metrics)));
    const names = new Set(metrics.map((m) => m.name));
    for (const name of ['loom.jobs.completed', 'loom.job.duration', 'loom.job.wait', 'loom.queue.depth']) expect(names).toContain(name);
  });

  it('serves a Prometheus scrape with the job counters, histograms and queue depths', async () => {
    const port = await freePort();
    const telemetry = (await startTelemetry({ prometheusPort: port, metricIntervalMs: 60_000, serviceName: 'shop-under-test' }))!;
    const shop = await startShop(mongo);
    let scrape: string;
    try {
      expect((await shop.post('/orders', anOrder('prom-1'))).status).toBe(202);
      await receiptRelayed(shop, 'prom-1');
      scrape = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    } finally {
      await shop.app.stop();
      await telemetry.shutdown();
    }
    expect(scrape).toMatch(/^loom_jobs_completed_total\{loom_job_name="send-receipt",messaging_destination_name="emails",otel_scope_name="@loom\/core"\} 1$/m);
    expect(scrape).toMatch(/^loom_job_duration_bucket\{loom_job_name="relay-outbox",.*le="\+Inf"\} 1$/m);
    expect(scrape).toMatch(/^loom_job_wait_count\{loom_job_name="send-receipt",.*\} 1$/m);
    expect(scrape).toMatch(/^loom_queue_depth\{messaging_destination_name="emails",loom_job_status="completed",otel_scope_name="@loom\/core"\} 2$/m);
  });
});
