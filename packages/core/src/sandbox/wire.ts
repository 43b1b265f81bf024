import { LoomError, NotCloneableError, type LoomErrorCode } from '../support/errors.js';

/**
 * What the engine and a sandbox thread say to each other (`postMessage`, structured clones). One
 * run at a time per thread; `runId` tells a late message of an earlier run from the current one's.
 */

/** An error as it crosses the boundary: an `Error` loses its class and its `code` in a structured clone. */
export interface WireError {
  name: string;
  message: string;
  stack?: string;
  code?: string;
  /** Other own fields that clone (e.g. `retryAfterMs` of a RateLimitedError). */
  props?: Record<string, unknown>;
}

/** The job fields a thread's `ctx` shows. */
export interface WireJob {
  id: string;
  name: string;
  attempt: number;
  idempotencyKey?: string;
  scheduledFor?: Date;
}

/** The `ctx` methods a thread calls in the engine (each answered by a `reply`). */
export type BridgeMethod = 'step' | 'patched' | 'sleep' | 'sleepUntil' | 'enqueue' | 'waitForJob' | 'waitForSignal' | 'progress' | 'dependencyResults';

export type ToThread =
  | { t: 'run'; runId: number; job: WireJob; payload: unknown }
  | { t: 'abort'; runId: number; reason: WireError }
  | { t: 'reply'; runId: number; callId: number; ok: true; value: unknown }
  | { t: 'reply'; runId: number; callId: number; ok: false; error: WireError; suspended: boolean }
  /** Run the function of a step the engine decided to execute. */
  | { t: 'fn'; runId: number; fnId: number };

export type FromThread =
  | { t: 'ready' }
  | { t: 'init-failed'; error: WireError }
  | { t: 'call'; runId: number; callId: number; method: BridgeMethod; args: unknown[] }
  | { t: 'fn-done'; runId: number; fnId: number; ok: true; value: unknown }
  | { t: 'fn-done'; runId: number; fnId: number; ok: false; error: WireError }
  | { t: 'log'; runId: number; level: 'debug' | 'info' | 'warn' | 'error'; obj: Record<string, unknown>; msg?: string }
  | { t: 'done'; runId: number; ok: true; value: unknown }
  | { t: 'done'; runId: number; ok: false; error: WireError; suspended: boolean };

/** What a thread gets as `workerData`. */
export interface ThreadData {
  moduleHref: string;
}

/** Marks an error inside a logged object, so the engine's logger gets an `Error` back. */
export const WIRE_ERROR_MARK = '__loomWireError';

/** `err` as it crosses: name, message, stack, code and the other fields that clone. */
export function toWire(err: unknown): WireError {
  if (!(err instanceof Error)) return { name: 'Error', message: `a non-Error value was thrown: ${describe(err)}` };
  const wire: WireError = { name: err.name, message: err.message };
  if (err.stack !== undefined) wire.stack = err.stack;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') wire.code = code;
  const props: Record<string, unknown> = {};
  for (const key of Object.keys(err)) {
    if (key === 'code' || key === 'name' || key === 'message' || key === 'stack') continue;
    const value = (err as unknown as Record<string, unknown>)[key];
    if (findCloneProblem(value) === null) props[key] = value;
  }
  if (Object.keys(props).length > 0) wire.props = props;
  return wire;
}

/**
 * The error back on this side: a Loom error (the `Symbol.for` brand, so `LoomError.is(err, code)`
 * holds) when it carries a code, else a plain `Error`; name, message, stack and fields kept.
 */
export function fromWire(wire: WireError): Error {
  const error: Error = wire.code !== undefined ? new LoomError(wire.code as LoomErrorCode, wire.message) : new Error(wire.message);
  Object.defineProperty(error, 'name', { value: wire.name, writable: true, configurable: true, enumerable: false });
  if (wire.stack !== undefined) error.stack = wire.stack;
  if (wire.code !== undefined && !(error instanceof LoomError)) (error as { code?: string }).code = wire.code;
  if (wire.props) Object.assign(error, wire.props);
  return error;
}

function describe(value: unknown): string {
  try {
    return typeof value === 'string' ? JSON.stringify(value) : String(value);
  } catch {
    return typeof value;
  }
}

/** Why a value cannot be structured-cloned, and where (`items[2].callback`; `''` for the value itself). */
export interface CloneProblem {
  path: string;
  reason: string;
}

const NOT_CLONEABLE_OBJECTS: Array<[abstract new (...args: never[]) => object, string]> = [
  [Promise, 'is a Promise; await it first'],
  [WeakMap, 'is a WeakMap'],
  [WeakSet, 'is a WeakSet'],
  [WeakRef, 'is a WeakRef'],
];

/**
 * The first place where `value` cannot be structured-cloned, or null. It walks the value for what
 * the algorithm refuses (functions, symbols, promises, weak collections) so that the error can
 * name the field; a value it finds nothing in is tried with `structuredClone` as the last word.
 */
export function findCloneProblem(value: unknown): CloneProblem | null {
  const found = walk(value, '', new Set());
  if (found) return found;
  if (typeof value !== 'object' || value === null) return null;
  try {
    structuredClone(value);
    return null;
  } catch (err) {
    return { path: '', reason: (err as Error).message };
  }
}

function walk(value: unknown, path: string, seen: Set<object>): CloneProblem | null {
  if (typeof value === 'function') return { path, reason: 'is a function' };
  if (typeof value === 'symbol') return { path, reason: 'is a symbol' };
  if (typeof value !== 'object' || value === null || seen.has(value)) return null;
  seen.add(value);
  for (const [type, reason] of NOT_CLONEABLE_OBJECTS) if (value instanceof type) return { path, reason };
  if (value instanceof Map) {
    for (const [k, v] of value) {
      const found = walk(k, `${path}<key>`, seen) ?? walk(v, `${path}.get(${describe(k)})`, seen);
      if (found) return found;
    }
    return null;
  }
  if (value instanceof Set) {
    for (const v of value) {
      const found = walk(v, `${path}<entry>`, seen);
      if (found) return found;
    }
    return null;
  }
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof Date || value instanceof RegExp) return null;
  const isArray = Array.isArray(value);
  for (const key of Object.keys(value)) {
    const child = isArray ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`;
    const found = walk((value as Record<string, unknown>)[key], child, seen);
    if (found) return found;
  }
  return null;
}

/** Throws `NOT_CLONEABLE` naming the field when `value` cannot cross the boundary. */
export function assertCloneable(what: string, value: unknown): void {
  const problem = findCloneProblem(value);
  if (problem) throw new NotCloneableError(what, problem.path, problem.reason);
}

/**
 * `value` with its objects, arrays and Dates made in this realm. A message from a thread is built
 * in the process's main realm; an engine running in another one (jest runs tests in a `vm`
 * context) would find its plain objects not plain (`Object.prototype` differs) and its Dates not
 * Dates. A value already of this realm, as always outside such a runner, is returned as it is: one
 * prototype check.
 */
export function adoptIntoRealm<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto === Object.prototype || proto === Array.prototype || proto === Date.prototype || proto === null) return value;
  return rebuild(value) as T;
}

function rebuild(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const tag = Object.prototype.toString.call(value);
  if (tag === '[object Date]') return new Date((value as Date).getTime());
  if (Array.isArray(value)) return value.map(rebuild);
  if (tag !== '[object Object]') return value;
  const proto = Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null;
  if (proto !== null && Object.getPrototypeOf(proto) !== null) return value; // a class instance: kept as it came
  const out: Record<string, unknown> = proto === null ? (Object.create(null) as Record<string, unknown>) : {};
  for (const key of Object.keys(value)) out[key] = rebuild((value as Record<string, unknown>)[key]);
  return out;
}
