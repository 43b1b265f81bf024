import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { buildWorkers, spawnScript, startEmulatorProcess, TRACED, type Child } from './processes/children.js';

// One process enqueues inside an HTTP request's span, another runs the job: the run must be part
// of the request's trace. Both are real processes with their own OpenTelemetry SDK, on the
// emulator run by its bin; the trace context travels only through the stored job.
const STARTUP_MS = 60_000;
const BUILD_MS = 240_000;
const RUN_MS = 60_000;

interface PrintedSpan {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  attributes: Record<string, unknown>;
  status: number;
  pid: number;
}

let emulator: { uri: string; child: Child };
const children: Child[] = [];

beforeAll(() => buildWorkers(), BUILD_MS);

beforeAll(async () => {
  emulator = await startEmulatorProcess(STARTUP_MS);
}, STARTUP_MS);

afterAll(async () => {
  await Promise.all(children.map((c) => c.kill('SIGKILL')));
  await emulator?.child.kill('SIGTERM');
});

function traced(database: string, mode: 'enqueue' | 'work'): Child {
  const child = spawnScript(TRACED, [], { MONGODB_URI: emulator.uri, DATABASE: database, MODE: mode });
  children.push(child);
  return child;
}

function spansOf(child: Child): PrintedSpan[] {
  return child
    .lines()
    .filter((l) => l.startsWith('SPAN '))
    .map((l) => JSON.parse(l.slice(5)) as PrintedSpan);
}

function one(spans: PrintedSpan[], name: string): PrintedSpan {
  const found = spans.filter((s) => s.name === name);
  if (found.length !== 1) throw new Error(`expected one span "${name}", got ${found.length}: ${spans.map((s) => s.name).join(', ')}`);
  return found[0]!;
}

describe('tracing across processes', () => {
  it(
    'a job enqueued in one process and run in another is one trace, from the request span to each attempt of the run',
    async () => {
      const database = `trace_${process.pid}`;
      const enqueuer = traced(database, 'enqueue');
      const enqueued = await enqueuer.waitForLine(/^ENQUEUED /, STARTUP_MS);
      const jobId = enqueued.slice('ENQUEUED '.length);
      expect(await enqueuer.exited).toBe(0);

      const worker = traced(database, 'work');
      await worker.waitForLine(/^DONE$/, STARTUP_MS + RUN_MS);
      expect(await worker.exited).toBe(0);

      const sent = spansOf(enqueuer);
      const ran = spansOf(worker);
      const request = one(sent, 'POST /orders');
      const publish = one(sent, 'publish orders');
      expect(publish).toMatchObject({ traceId: request.traceId, parentSpanId: request.spanId, kind: 3 /* PRODUCER */ });
      expect(publish.attributes).toMatchObject({ 'messaging.system': 'loom', 'messaging.message.id': jobId });

      // The durable sleep split the run into two attempts, each its own span, both children of publish.
      const attempts = ran.filter((s) => s.name === 'process orders');
      expect(attempts.map((s) => s.attributes['loom.job.outcome'])).toEqual(['suspended', 'completed']);
      for (const attempt of attempts) {
        expect(attempt).toMatchObject({ traceId: request.traceId, parentSpanId: publish.spanId, kind: 4 /* CONSUMER */ });
        expect(attempt.attributes).toMatchObject({ 'messaging.message.id': jobId, 'loom.job.name': 'fulfil', 'messaging.destination.name': 'orders' });
        expect(attempt.pid).not.toBe(request.pid);
      }
      expect(one(ran, 'step reserve')).toMatchObject({ traceId: request.traceId, parentSpanId: attempts[0]!.spanId });
      expect(one(ran, 'step ship')).toMatchObject({ traceId: request.traceId, parentSpanId: attempts[1]!.spanId });
    },
    BUILD_MS + 2 * STARTUP_MS + RUN_MS,
  );
});
