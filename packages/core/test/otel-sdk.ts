import { context, metrics, trace, type Attributes } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { DataPointType, MeterProvider, MetricReader, type DataPoint, type Histogram, type MetricData } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';

/** A metric reader the test collects from by hand. */
class TestReader extends MetricReader {
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
}

/** One data point as tests compare it: its attributes and its value (a count and sum for histograms). */
export interface Point {
  attributes: Attributes;
  value: number | { count: number; sum: number };
}

export interface OtelSdk {
  /** Spans ended so far, in the order they ended. */
  spans(): ReadableSpan[];
  /** The one ended span named `name`; throws unless there is exactly one. */
  span(name: string): ReadableSpan;
  /** Collects metrics now and returns the points of `name`, or [] if it reported none. */
  points(name: string): Promise<Point[]>;
  /** The raw collected metric, for its descriptor (unit). */
  metric(name: string): Promise<MetricData | undefined>;
  uninstall(): Promise<void>;
}

/**
 * Registers a tracer provider with an in-memory exporter, a meter provider with a manual reader
 * and the AsyncLocalStorage context manager as the OpenTelemetry globals, as an application's SDK
 * setup would. `uninstall` removes them, so the next test starts with none.
 */
export function installOtelSdk(): OtelSdk {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);

  const collect = async (name: string): Promise<MetricData | undefined> => {
    const { resourceMetrics, errors } = await reader.collect();
    if (errors.length > 0) throw errors[0];
    return resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
  };
  return {
    spans: () => exporter.getFinishedSpans(),
    span(name) {
      const found = exporter.getFinishedSpans().filter((s) => s.name === name);
      if (found.length !== 1)
        throw new Error(
          `expected one span "${name}", found ${found.length}: ${exporter
            .getFinishedSpans()
            .map((s) => s.name)
            .join(', ')}`,
        );
      return found[0]!;
    },
    async points(name) {
      const data = await collect(name);
      if (!data) return [];
      return (data.dataPoints as DataPoint<unknown>[]).map((p) => ({
        attributes: p.attributes,
        value:
          data.dataPointType === DataPointType.HISTOGRAM ? { count: (p.value as Histogram).count, sum: (p.value as Histogram).sum ?? 0 } : (p.value as number),
      }));
    },
    metric: collect,
    async uninstall() {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
      trace.disable();
      metrics.disable();
      context.disable();
    },
  };
}

/** The parent span id of `span` (undefined for a root). */
export function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}
