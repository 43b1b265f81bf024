import type { SpanContext } from '@opentelemetry/api';
import type { JobTraceContext } from '../store/job-record.js';
import type { OtelApi } from './otel-api.js';

/*
 * The trace context stored with a job is W3C Trace Context, written and read here rather than
 * through `propagation.inject`/`extract`: the global propagator may be unset (a no-op) or
 * configured for another format, and the stored field must mean the same to every process that
 * runs the job.
 */

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The stored form of `context`, or undefined when it is not a valid span context (no trace to continue). */
export function toJobTrace(api: OtelApi, context: SpanContext, link: boolean): JobTraceContext | undefined {
  if (!api.isSpanContextValid(context)) return undefined;
  const flags = (context.traceFlags & 0xff).toString(16).padStart(2, '0');
  const trace: JobTraceContext = { traceparent: `00-${context.traceId}-${context.spanId}-${flags}` };
  const state = context.traceState?.serialize();
  if (state) trace.tracestate = state;
  if (link) trace.link = true;
  return trace;
}

/**
 * The remote span context a stored trace names, or undefined when it is malformed (W3C rules:
 * version `ff` is invalid, version `00` has exactly four fields, all-zero ids are invalid).
 */
export function fromJobTrace(api: OtelApi, trace: JobTraceContext): SpanContext | undefined {
  const match = typeof trace.traceparent === 'string' ? TRACEPARENT.exec(trace.traceparent) : null;
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  const context: SpanContext = { traceId, spanId, traceFlags: parseInt(flags, 16), isRemote: true };
  if (typeof trace.tracestate === 'string' && trace.tracestate !== '') context.traceState = api.createTraceState(trace.tracestate);
  return api.isSpanContextValid(context) ? context : undefined;
}
