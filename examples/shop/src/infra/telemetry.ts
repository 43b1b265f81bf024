/**
 * OpenTelemetry for the shop, set up the way an application does it: register the SDK before the
 * engine starts, and Loom's spans (`publish <queue>`, `process <queue>`, `step <name>`) and metrics
 * (`loom.jobs.*`, `loom.job.*`, `loom.queue.depth`) go wherever the SDK exports them.
 *
 * - `OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318`: traces and metrics over OTLP/HTTP (JSON)
 *   to `<endpoint>/v1/traces` and `/v1/metrics`; metrics every `OTEL_METRIC_EXPORT_INTERVAL` ms
 *   (default 60000).
 * - `PROMETHEUS_PORT=9464`: a Prometheus scrape endpoint at `http://<host>:9464/metrics`
 *   (`loom_jobs_completed_total`, `loom_job_duration_milliseconds_bucket`, `loom_queue_depth`, ...).
 * - `OTEL_SERVICE_NAME` names the service (default `loom-shop`).
 *
 * With neither set nothing is loaded and Loom reports nothing. The SDK packages are imported only
 * when used, as an application that makes telemetry optional would.
 */
export interface TelemetrySettings {
  otlpEndpoint?: string;
  metricIntervalMs: number;
  prometheusPort?: number;
  serviceName: string;
}

/** Reads the settings from the environment (see the module comment). */
export function telemetrySettings(env: NodeJS.ProcessEnv = process.env): TelemetrySettings {
  const settings: TelemetrySettings = {
    metricIntervalMs: env.OTEL_METRIC_EXPORT_INTERVAL ? Number(env.OTEL_METRIC_EXPORT_INTERVAL) : 60_000,
    serviceName: env.OTEL_SERVICE_NAME || 'loom-shop',
  };
  if (env.OTEL_EXPORTER_OTLP_ENDPOINT) settings.otlpEndpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '');
  if (env.PROMETHEUS_PORT) settings.prometheusPort = Number(env.PROMETHEUS_PORT);
  return settings;
}

/** What `startTelemetry` set up: a line for the console, and a shutdown that flushes what is buffered. */
export interface Telemetry {
  description: string;
  /** Exports what is buffered, stops the exporters and unregisters the SDK. */
  shutdown(): Promise<void>;
}

/** Registers the OpenTelemetry SDK as `settings` say; undefined when they ask for nothing. */
export async function startTelemetry(settings: TelemetrySettings = telemetrySettings()): Promise<Telemetry | undefined> {
  const { otlpEndpoint, prometheusPort } = settings;
  if (otlpEndpoint === undefined && prometheusPort === undefined) return undefined;
  const [api, { AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { resourceFromAttributes }, traceSdk, metricsSdk] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/sdk-metrics'),
  ]);
  const resource = resourceFromAttributes({ 'service.name': settings.serviceName });
  const described: string[] = [];

  // Traces go to OTLP only; without an endpoint they are not recorded at all.
  const spanProcessors = [];
  if (otlpEndpoint !== undefined) {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    spanProcessors.push(new traceSdk.BatchSpanProcessor(new OTLPTraceExporter({ url: `${otlpEndpoint}/v1/traces` })));
    described.push(`traces and metrics to ${otlpEndpoint} (OTLP/HTTP)`);
  }
  const readers: Array<InstanceType<typeof metricsSdk.MetricReader>> = [];
  if (otlpEndpoint !== undefined) {
    const { OTLPMetricExporter } = await import('@opentelemetry/exporter-metrics-otlp-http');
    readers.push(
      new metricsSdk.PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter({ url: `${otlpEndpoint}/v1/metrics` }),
        exportIntervalMillis: settings.metricIntervalMs,
      }),
    );
  }
  if (prometheusPort !== undefined) {
    const { PrometheusExporter } = await import('@opentelemetry/exporter-prometheus');
    const prometheus = new PrometheusExporter({ port: prometheusPort, preventServerStart: true });
    await prometheus.startServer();
    readers.push(prometheus);
    described.push(`Prometheus scrape on http://localhost:${prometheusPort}/metrics`);
  }
  const tracerProvider = new traceSdk.BasicTracerProvider({ resource, spanProcessors });
  const meterProvider = new metricsSdk.MeterProvider({ resource, readers });
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  api.trace.setGlobalTracerProvider(tracerProvider);
  api.metrics.setGlobalMeterProvider(meterProvider);
  return {
    description: `OpenTelemetry: ${described.join('; ')}`,
    async shutdown() {
      await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]);
      api.trace.disable();
      api.metrics.disable();
      api.propagation.disable();
      api.context.disable();
    },
  };
}
