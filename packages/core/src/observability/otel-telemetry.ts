import type { Attributes, Context, Link, Span, SpanContext, Tracer } from '@opentelemetry/api';
import type { EnqueueResult, JobRecord, JobTraceContext, NewJob } from '../store/job-record.js';
import type { JobStore } from '../store/store.js';
import { nowMs, type Clock } from '../support/clock.js';
import type { Logger } from '../support/logger.js';
import { ATTR, SCOPE, SYSTEM } from './attributes.js';
import { JobMetrics } from './job-metrics.js';
import type { OtelApi } from './otel-api.js';
import { QueueDepthGauge } from './queue-depth.js';
import { NOOP_RUN, type AttemptOutcome, type RunTelemetry, type Telemetry } from './telemetry.js';
import { fromJobTrace, toJobTrace } from './traceparent.js';

/**
 * Traces and metrics through `@opentelemetry/api`. With no SDK registered it does nothing at all:
 * no span, context or attribute is made (the API's no-op objects would still cost allocations on
 * every job). Whether a tracer provider is registered is asked on every enqueue and run, so an
 * SDK registered after the engine was built still gets the spans; the meter is taken when the
 * engine starts (register the SDK before `loom.start()` for metrics).
 */
export class OtelTelemetry implements Telemetry {
  readonly tracer: Tracer;
  private readonly noopTracerProvider: unknown;
  private metrics: JobMetrics | undefined;
  private depth: QueueDepthGauge | undefined;
  /** The last stored trace {@link originOf} read, and the span context it named. */
  private lastTrace: { traceparent: string; tracestate: string | undefined; context: SpanContext | undefined } | undefined;

  constructor(
    readonly api: OtelApi,
    private readonly deps: { store: JobStore; clock: Clock; logger: Logger },
  ) {
    this.tracer = api.trace.getTracer(SCOPE);
    // The API's no-op provider (not exported): what a proxy without a registered SDK delegates to.
    this.noopTracerProvider = new api.ProxyTracerProvider().getDelegate();
  }

  /**
   * False while no tracer provider is registered. A provider registered through another copy of
   * the API is not a proxy of this copy's class, so it counts as registered.
   */
  private get tracing(): boolean {
    const provider = this.api.trace.getTracerProvider();
    return !(provider instanceof this.api.ProxyTracerProvider) || provider.getDelegate() !== this.noopTracerProvider;
  }

  async publish(def: { name: string; queue: string }, jobs: NewJob[], batch: boolean, store: () => Promise<EnqueueResult[]>): Promise<EnqueueResult[]> {
    if (!this.tracing) return store();
    const { api } = this;
    const attributes = messagingAttributes('publish', def.queue, def.name);
    if (batch) attributes[ATTR.batchCount] = jobs.length;
    const active = api.context.active();
    const span = this.tracer.startSpan(`publish ${def.queue}`, { kind: api.SpanKind.PRODUCER, attributes }, active);
    const trace = toJobTrace(api, span.spanContext(), batch);
    if (trace) for (const job of jobs) job.trace = trace;
    try {
      const results = await api.context.with(api.trace.setSpan(active, span), store);
      if (!batch && results.length === 1) {
        span.setAttribute(ATTR.messageId, results[0]!.id);
        if (results[0]!.deduplicated) span.setAttribute(ATTR.deduplicated, true);
      }
      return results;
    } catch (err) {
      failSpan(api, span, err);
      throw err;
    } finally {
      span.end();
    }
  }

  startRun(job: JobRecord): RunTelemetry {
    const { api, metrics } = this;
    const tracing = this.tracing;
    if (!tracing && !metrics) return NOOP_RUN;
    const startedAt = nowMs(this.deps.clock);
    metrics?.started(job, startedAt - job.runAt.getTime());
    if (!tracing) return new OtelRun(this, job, undefined, undefined, startedAt);
    let parent: Context = api.ROOT_CONTEXT;
    let links: Link[] | undefined;
    const origin = job.trace && this.originOf(job.trace);
    if (origin) {
      if (job.trace!.link) links = [{ context: origin }];
      else parent = api.trace.setSpanContext(parent, origin);
    }
    const attributes = messagingAttributes('process', job.queue, job.name);
    attributes[ATTR.messageId] = job.id;
    attributes[ATTR.attempt] = job.attempt;
    const span = this.tracer.startSpan(
      `process ${job.queue}`,
      links ? { kind: api.SpanKind.CONSUMER, attributes, links } : { kind: api.SpanKind.CONSUMER, attributes },
      parent,
    );
    return new OtelRun(this, job, span, api.trace.setSpan(parent, span), startedAt);
  }

  /**
   * The span context a job's stored trace names, parsed once for a run of jobs that share it (the
   * jobs of one `enqueueMany` carry the same trace): parsing it per run was a regular expression,
   * five strings and an object per job. The context is read-only to the spans that use it.
   */
  private originOf(trace: JobTraceContext): SpanContext | undefined {
    const last = this.lastTrace;
    if (last !== undefined && last.traceparent === trace.traceparent && last.tracestate === trace.tracestate) return last.context;
    const context = fromJobTrace(this.api, trace);
    this.lastTrace = { traceparent: trace.traceparent, tracestate: trace.tracestate, context };
    return context;
  }

  start(): void {
    if (this.metrics) return;
    const meter = this.api.metrics.getMeter(SCOPE);
    if (meter === this.api.createNoopMeter()) return; // no meter provider registered
    this.metrics = new JobMetrics(meter);
    this.depth = new QueueDepthGauge(meter, this.deps.store, this.deps.logger, this.deps.clock);
  }

  stop(): void {
    this.depth?.close();
    this.depth = undefined;
  }

  /** @internal */
  attemptEnded(job: JobRecord, outcome: AttemptOutcome, startedAt: number): void {
    this.metrics?.ended(job, outcome, nowMs(this.deps.clock) - startedAt);
  }
}

/** One attempt: its `process` span (ended once, with the outcome; none while not tracing) and its metrics. */
class OtelRun implements RunTelemetry {
  private ended = false;

  constructor(
    private readonly telemetry: OtelTelemetry,
    private readonly job: JobRecord,
    private readonly span: Span | undefined,
    private readonly context: Context | undefined,
    private readonly startedAt: number,
  ) {}

  call<A, B, R>(fn: (a: A, b: B) => R, thisArg: unknown, a: A, b: B): R {
    return this.context ? this.telemetry.api.context.with(this.context, fn, thisArg, a, b) : fn.call(thisArg, a, b);
  }

  async step<T>(name: string, fn: () => Promise<T>): Promise<T> {
    if (!this.context) return fn();
    const { api } = this.telemetry;
    // The handler's active context when a context manager tracks it (a step inside a step nests);
    // this attempt's span otherwise, so steps nest under their run even without one.
    const active = api.context.active();
    const parent = api.trace.getSpan(active) ? active : this.context;
    const span = this.telemetry.tracer.startSpan(`step ${name}`, { attributes: { [ATTR.stepName]: name, [ATTR.messageId]: this.job.id } }, parent);
    try {
      return await api.context.with(api.trace.setSpan(parent, span), fn);
    } catch (err) {
      failSpan(api, span, err);
      throw err;
    } finally {
      span.end();
    }
  }

  end(outcome: AttemptOutcome, error?: Error | string): void {
    if (this.ended) return;
    this.ended = true;
    const { span } = this;
    if (span) {
      span.setAttribute(ATTR.outcome, outcome);
      if (error !== undefined) failSpan(this.telemetry.api, span, error);
      span.end();
    }
    this.telemetry.attemptEnded(this.job, outcome, this.startedAt);
  }
}

/** The messaging attributes every `publish` (operation type `send`) and `process` span has. */
function messagingAttributes(operation: 'publish' | 'process', queue: string, jobName: string): Attributes {
  return {
    [ATTR.system]: SYSTEM,
    [ATTR.destination]: queue,
    [ATTR.operationType]: operation === 'publish' ? 'send' : 'process',
    [ATTR.operationName]: operation,
    [ATTR.jobName]: jobName,
  };
}

/** Marks a span failed: error status with the message, and the exception recorded (a reason string as the message only). */
function failSpan(api: OtelApi, span: Span, err: unknown): void {
  if (typeof err === 'string') {
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: err });
    return;
  }
  const error = err instanceof Error ? err : new Error(String(err));
  span.recordException(error);
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: error.message });
}
