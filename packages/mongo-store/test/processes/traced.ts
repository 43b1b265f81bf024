/**
 * An instrumented Loom process for the cross-process tracing test, run compiled (tsconfig.json
 * here; children.ts builds it). It registers an OpenTelemetry SDK as an application would and
 * prints every span it ends as a line `SPAN <json>`.
 *
 * env: MONGODB_URI, DATABASE, MODE
 * - `enqueue`: inside a server span `POST /orders`, enqueue `fulfil`; print `ENQUEUED <id>`, exit.
 * - `work`: run jobs until `fulfil` completed (a step, a 200 ms durable sleep, a step); print DONE, exit.
 */
import 'reflect-metadata';
import { context, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, SimpleSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { Job, Loom, type JobContext } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';

const { MONGODB_URI, DATABASE, MODE } = process.env;
if (!MONGODB_URI || !DATABASE || !MODE) throw new Error('traced.ts needs MONGODB_URI, DATABASE and MODE');

/** Prints each span as one JSON line: what the test compares across processes. */
const printing: SpanExporter = {
  export(spans: ReadableSpan[], done) {
    for (const span of spans) {
      const line = {
        name: span.name,
        kind: span.kind,
        traceId: span.spanContext().traceId,
        spanId: span.spanContext().spanId,
        parentSpanId: span.parentSpanContext?.spanId ?? null,
        attributes: span.attributes,
        status: span.status.code,
        pid: process.pid,
      };
      process.stdout.write(`SPAN ${JSON.stringify(line)}\n`);
    }
    done({ code: 0 });
  },
  shutdown: () => Promise.resolve(),
};
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(printing)] });
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(provider);

const store = new MongoStore({ url: MONGODB_URI, database: DATABASE, pollInterval: '100ms', connectTimeout: '60s' });

@Job({ name: 'fulfil', queue: 'orders' })
class Fulfil {
  async run(payload: { order: string }, ctx: JobContext): Promise<string> {
    await ctx.step('reserve', () => `reserved ${payload.order}`);
    await ctx.sleep('cool-off', '200ms');
    await ctx.step('ship', () => `shipped ${payload.order}`);
    return 'fulfilled';
  }
}

const loom = await Loom.create({ store, jobs: [Fulfil], concurrency: 2, pollInterval: '100ms', owner: `traced:${MODE}:${process.pid}` });

if (MODE === 'enqueue') {
  const { id } = await trace.getTracer('http').startActiveSpan('POST /orders', { kind: SpanKind.SERVER }, async (span) => {
    try {
      return await loom.enqueue(Fulfil, { order: 'o-42' });
    } finally {
      span.end();
    }
  });
  process.stdout.write(`ENQUEUED ${id}\n`);
} else {
  const completed = new Promise<void>((resolve) => loom.on('job:completed', (e) => e.job.name === 'fulfil' && resolve()));
  await loom.start();
  await completed;
  await loom.stop();
  process.stdout.write('DONE\n');
}
await provider.shutdown();
await store.close();
