import 'reflect-metadata';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { context, createTraceState, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { Job, type JobContext } from '@loom/core';
import { createTestLoom } from '@loom/testing';
import { installOtelSdk, parentOf, type OtelSdk } from './otel-sdk.js';

@Job({ name: 'send-receipt', queue: 'emails', retries: 2, backoff: { type: 'fixed', delay: '10s' } })
class SendReceipt {
  async run(payload: { order: string; failTimes?: number }, ctx: JobContext): Promise<void> {
    if (ctx.attempt <= (payload.failTimes ?? 0)) throw new Error(`smtp down (attempt ${ctx.attempt})`);
  }
}

@Job({ name: 'fulfil' })
class Fulfil {
  async run(payload: { order: string }, ctx: JobContext): Promise<void> {
    await ctx.step('reserve', async () => {
      // A span the application opens inside a step nests under the step's span.
      trace.getTracer('shop').startActiveSpan('inventory.reserve', (span) => span.end());
      return 'reserved';
    });
    await ctx.enqueue(SendReceipt, { order: payload.order });
    await ctx.sleep('cool-off', '1d');
    await ctx.step('ship', async () => 'shipped');
  }
}

@Job({ name: 'flaky-step', retries: 0 })
class FlakyStep {
  async run(_: unknown, ctx: JobContext): Promise<void> {
    await ctx.step('call-api', async () => {
      throw new Error('api answered 503');
    });
  }
}

/** Runs `fn` inside an active server span, as an HTTP framework's instrumentation would. */
async function inRequest<T>(fn: () => Promise<T>): Promise<T> {
  return trace.getTracer('http').startActiveSpan('POST /orders', { kind: SpanKind.SERVER }, async (span) => {
    try {
      return await fn();
    } finally {
      span.end();
    }
  });
}

describe('tracing (OpenTelemetry SDK registered)', () => {
  let sdk: OtelSdk;
  beforeEach(() => {
    sdk = installOtelSdk();
  });
  afterEach(() => sdk.uninstall());

  it('the run continues the trace of the request that enqueued it: publish (PRODUCER) under the request, process (CONSUMER) under publish', async () => {
    const t = await createTestLoom({ jobs: [SendReceipt] });
    const { id } = await inRequest(() => t.enqueue(SendReceipt, { order: 'o-1' }));
    await t.runUntilIdle();

    const request = sdk.span('POST /orders');
    const publish = sdk.span('publish emails');
    const process = sdk.span('process emails');
    const traceId = request.spanContext().traceId;
    expect(publish.kind).toBe(SpanKind.PRODUCER);
    expect(publish.spanContext().traceId).toBe(traceId);
    expect(parentOf(publish)).toBe(request.spanContext().spanId);
    expect(publish.attributes).toEqual({
      'messaging.system': 'loom',
      'messaging.destination.name': 'emails',
      'messaging.operation.type': 'send',
      'messaging.operation.name': 'publish',
      'messaging.message.id': id,
      'loom.job.name': 'send-receipt',
    });
    expect(process.kind).toBe(SpanKind.CONSUMER);
    expect(process.spanContext().traceId).toBe(traceId);
    expect(parentOf(process)).toBe(publish.spanContext().spanId);
    expect(process.attributes).toEqual({
      'messaging.system': 'loom',
      'messaging.destination.name': 'emails',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.message.id': id,
      'loom.job.name': 'send-receipt',
      'loom.job.attempt': 1,
      'loom.job.outcome': 'completed',
    });
    expect(process.status.code).toBe(SpanStatusCode.UNSET);
    // What another process needs to continue the trace is stored with the job.
    expect((await t.getJob(id))?.trace).toEqual({ traceparent: `00-${traceId}-${publish.spanContext().spanId}-01` });
    await t.stop();
  });

  it('a failed attempt sets error status and records the exception; the retry is a span of its own in the same trace; the last failure says dead', async () => {
    const t = await createTestLoom({ jobs: [SendReceipt] });
    await inRequest(() => t.enqueue(SendReceipt, { order: 'o-2', failTimes: 5 }));
    await t.runUntilIdle();
    await t.advance('10s');
    await t.advance('10s');

    const publish = sdk.span('publish emails');
    const attempts = sdk.spans().filter((s) => s.name === 'process emails');
    expect(attempts.map((s) => [s.attributes['loom.job.attempt'], s.attributes['loom.job.outcome']])).toEqual([
      [1, 'failed'],
      [2, 'failed'],
      [3, 'dead'],
    ]);
    for (const [i, span] of attempts.entries()) {
      expect(parentOf(span)).toBe(publish.spanContext().spanId);
      expect(span.spanContext().traceId).toBe(publish.spanContext().traceId);
      expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: `smtp down (attempt ${i + 1})` });
      const exception = span.events.find((e) => e.name === 'exception');
      expect(exception?.attributes).toMatchObject({ 'exception.type': 'Error', 'exception.message': `smtp down (attempt ${i + 1})` });
    }
    await t.stop();
  });

  it('steps and child enqueues nest under the run; a durable sleep ends the attempt span, and the resumed attempt is another span of the same trace', async () => {
    const t = await createTestLoom({ jobs: [Fulfil, SendReceipt] });
    const { id } = await t.enqueue(Fulfil, { order: 'o-3' });
    await t.runUntilIdle();

    const publish = sdk.span('publish default');
    expect(parentOf(publish)).toBeUndefined(); // enqueued outside any trace: a new one starts here
    const [first] = sdk.spans().filter((s) => s.name === 'process default');
    // Asleep for a day, and its span is already ended (exported) with the outcome.
    expect((await t.getJob(id))?.status).toBe('queued');
    expect(first?.attributes).toMatchObject({ 'loom.job.attempt': 1, 'loom.job.outcome': 'suspended' });
    expect(parentOf(first!)).toBe(publish.spanContext().spanId);
    const reserve = sdk.span('step reserve');
    expect(parentOf(reserve)).toBe(first!.spanContext().spanId);
    expect(reserve.attributes).toEqual({ 'loom.step.name': 'reserve', 'messaging.message.id': id });
    expect(parentOf(sdk.span('inventory.reserve'))).toBe(reserve.spanContext().spanId);
    const childPublish = sdk.span('publish emails');
    expect(parentOf(childPublish)).toBe(first!.spanContext().spanId);
    const childRun = sdk.span('process emails');
    expect(parentOf(childRun)).toBe(childPublish.spanContext().spanId);

    await t.advance('1d');
    expect((await t.getJob(id))?.status).toBe('completed');
    const attempts = sdk.spans().filter((s) => s.name === 'process default');
    expect(attempts).toHaveLength(2);
    const second = attempts[1]!;
    expect(second.attributes['loom.job.outcome']).toBe('completed');
    expect(parentOf(second)).toBe(publish.spanContext().spanId);
    expect(second.spanContext().traceId).toBe(publish.spanContext().traceId);
    expect(parentOf(sdk.span('step ship'))).toBe(second.spanContext().spanId);
    // The replayed step ran once: one span.
    expect(sdk.spans().filter((s) => s.name === 'step reserve')).toHaveLength(1);
    for (const span of sdk.spans()) expect(span.spanContext().traceId).toBe(publish.spanContext().traceId);
    await t.stop();
  });

  it('a step that throws has an error span with the exception', async () => {
    const t = await createTestLoom({ jobs: [FlakyStep] });
    await t.enqueue(FlakyStep, {});
    await t.runUntilIdle();
    const step = sdk.span('step call-api');
    expect(step.status).toEqual({ code: SpanStatusCode.ERROR, message: 'api answered 503' });
    expect(step.events.map((e) => e.name)).toEqual(['exception']);
    expect(parentOf(step)).toBe(sdk.span('process default').spanContext().spanId);
    await t.stop();
  });

  it('enqueueMany: one publish span for the batch; each run starts a trace of its own, linked to it', async () => {
    const t = await createTestLoom({ jobs: [SendReceipt] });
    const results = await inRequest(() => t.enqueueMany(SendReceipt, [{ order: 'a' }, { order: 'b' }, { order: 'c' }]));
    await t.runUntilIdle();

    const request = sdk.span('POST /orders');
    const publish = sdk.span('publish emails');
    expect(parentOf(publish)).toBe(request.spanContext().spanId);
    expect(publish.attributes['messaging.batch.message_count']).toBe(3);
    const runs = sdk.spans().filter((s) => s.name === 'process emails');
    expect(runs.map((s) => s.attributes['messaging.message.id']).sort()).toEqual(results.map((r) => r.id).sort());
    for (const run of runs) {
      expect(parentOf(run)).toBeUndefined();
      expect(run.spanContext().traceId).not.toBe(request.spanContext().traceId);
      expect(run.links.map((l) => l.context.spanId)).toEqual([publish.spanContext().spanId]);
      expect(run.links[0]!.context.traceId).toBe(request.spanContext().traceId);
    }
    expect(new Set(runs.map((s) => s.spanContext().traceId)).size).toBe(3);
    expect((await t.getJob(results[0]!.id))?.trace?.link).toBe(true);
    await t.stop();
  });

  it('an incoming W3C tracestate travels with the job to its run, and an unsampled trace stays unsampled', async () => {
    const t = await createTestLoom({ jobs: [SendReceipt] });
    // What an HTTP server's propagator extracts from `traceparent: 00-...-00` and `tracestate: vendor=abc`.
    const incoming = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: 0,
      isRemote: true,
      traceState: createTraceState('vendor=abc'),
    });
    const { id } = await context.with(incoming, () => t.enqueue(SendReceipt, { order: 'o-7' }));
    const stored = (await t.getJob(id))?.trace;
    expect(stored?.tracestate).toBe('vendor=abc');
    expect(stored?.traceparent).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-00$/);
    await t.runUntilIdle();
    expect((await t.getJob(id))?.status).toBe('completed');
    // The default sampler follows the parent: nothing of this trace is recorded, in either process.
    expect(sdk.spans()).toEqual([]);
    await t.stop();
  });

  it('a job stored without a trace context (enqueued with no SDK, or through the store) runs in a new trace', async () => {
    const t = await createTestLoom({ jobs: [SendReceipt] });
    const [{ id }] = await t.store.enqueue(
      [{ name: 'send-receipt', queue: 'emails', payload: { order: 'o-4' }, priority: 0, runAt: t.clock.now(), maxAttempts: 3 }],
      { now: t.clock.now() },
    );
    await t.runUntilIdle();
    const process = sdk.span('process emails');
    expect(process.attributes['messaging.message.id']).toBe(id);
    expect(parentOf(process)).toBeUndefined();
    expect(process.links).toEqual([]);
    await t.stop();
  });

  it('a malformed stored trace context is ignored: the run starts a new trace', async () => {
    const t = await createTestLoom({ jobs: [SendReceipt] });
    await t.store.enqueue(
      [
        {
          name: 'send-receipt',
          queue: 'emails',
          payload: { order: 'o-6' },
          priority: 0,
          runAt: t.clock.now(),
          maxAttempts: 3,
          trace: { traceparent: '00-not-a-trace-01' },
        },
      ],
      { now: t.clock.now() },
    );
    await t.runUntilIdle();
    const process = sdk.span('process emails');
    expect(parentOf(process)).toBeUndefined();
    expect(process.attributes['loom.job.outcome']).toBe('completed');
    await t.stop();
  });
});

describe('tracing with @opentelemetry/api installed but no SDK registered', () => {
  it('stores no trace context and runs jobs as usual', async () => {
    const t = await createTestLoom({ jobs: [SendReceipt] });
    const { id } = await t.enqueue(SendReceipt, { order: 'o-5' });
    await t.runUntilIdle();
    const job = await t.getJob(id);
    expect(job?.status).toBe('completed');
    expect(job?.trace).toBeUndefined();
    await t.stop();
  });
});
