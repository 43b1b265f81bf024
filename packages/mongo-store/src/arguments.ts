import { ObjectId } from 'mongodb';
import { LoomError, type JobTraceContext } from '@loom/core';
import { StoreArgumentError } from './store-errors.js';

/**
 * Checks on caller-supplied values before they reach a filter. A value that arrived through JSON
 * (an HTTP body, a queue message) may be an object such as `{ "$ne": null }`; a filter built from it
 * would match other people's jobs. So every id, token, key and name is proven to be a plain string
 * (or Date, number) first, and nothing the caller sends is ever spread into a filter.
 */

const OBJECT_ID_HEX = /^[0-9a-f]{24}$/i;

function invalid(what: string, value: unknown, expected: string): LoomError {
  const shown = typeof value === 'string' ? JSON.stringify(value) : typeof value;
  return new StoreArgumentError(`${what} must be ${expected}, got ${shown}`);
}

/** Throws INVALID_ARGUMENT unless `value` is a string. */
export function requireString(value: unknown, what: string): string {
  if (typeof value !== 'string') throw invalid(what, value, 'a string');
  return value;
}

/** Throws INVALID_ARGUMENT unless `value` is an array of strings. */
export function requireStrings(value: unknown, what: string): string[] {
  if (!Array.isArray(value)) throw invalid(what, value, 'an array of strings');
  return value.map((item, i) => requireString(item, `${what}[${i}]`));
}

/** Throws INVALID_ARGUMENT unless `value` is a valid Date. */
export function requireDate(value: unknown, what: string): Date {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw invalid(what, value, 'a valid Date');
  return value;
}

/** Throws INVALID_ARGUMENT unless `value` is an array of valid Dates. */
export function requireDates(value: unknown, what: string): Date[] {
  if (!Array.isArray(value)) throw invalid(what, value, 'an array of Dates');
  return value.map((item, i) => requireDate(item, `${what}[${i}]`));
}

/** Throws INVALID_ARGUMENT unless `value` is a finite number (an integer when `integer`). */
export function requireNumber(value: unknown, what: string, integer = false): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || (integer && !Number.isInteger(value))) {
    throw invalid(what, value, integer ? 'an integer' : 'a finite number');
  }
  return value;
}

/**
 * A job's trace context, rebuilt from its checked fields: only `traceparent`, `tracestate` and
 * `link` are stored, so nothing else a caller put in the object reaches a document.
 */
export function requireTraceContext(value: unknown, what: string): JobTraceContext {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(what, value, 'an object');
  const { traceparent, tracestate, link, ...rest } = value as Record<string, unknown>;
  const extra = Object.keys(rest);
  if (extra.length > 0) throw new StoreArgumentError(`${what} has unknown field ${JSON.stringify(extra[0])}`);
  const trace: JobTraceContext = { traceparent: requireString(traceparent, `${what}.traceparent`) };
  if (tracestate !== undefined) trace.tracestate = requireString(tracestate, `${what}.tracestate`);
  if (link !== undefined) {
    if (typeof link !== 'boolean') throw invalid(`${what}.link`, link, 'a boolean');
    trace.link = link;
  }
  return trace;
}

/**
 * The ObjectId behind a job id string, or null when the string cannot be one of our ids (such a
 * job does not exist). Throws INVALID_ARGUMENT when the id is not a string at all.
 * `ObjectId.isValid` also accepts any 12-character string, so the hex form is checked explicitly.
 */
export function parseJobId(value: unknown, what = 'job id'): ObjectId | null {
  const id = requireString(value, what);
  return OBJECT_ID_HEX.test(id) ? ObjectId.createFromHexString(id) : null;
}

/** A list limit: undefined = all; zero or less = none (as MemoryStore). Throws INVALID_ARGUMENT unless a number. */
export function listLimit(limit: unknown): number | undefined {
  if (limit === undefined) return undefined;
  return Math.max(0, requireNumber(limit, 'filter.limit', true));
}
