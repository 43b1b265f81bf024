// `node --import ./with-otel-sdk.mjs app.mjs`: registers an OpenTelemetry SDK before the app runs
// (every span sampled and batched to an exporter that drops them, metrics aggregated for a reader
// that is never collected, AsyncLocalStorage context), for the bench's "SDK registered" figure.
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

const dropAll = { export: (_spans, done) => done({ code: 0 }), shutdown: () => Promise.resolve() };
class IdleReader extends MetricReader {
  onShutdown() {
    return Promise.resolve();
  }
  onForceFlush() {
    return Promise.resolve();
  }
}
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropAll)] }));
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new IdleReader()] }));
