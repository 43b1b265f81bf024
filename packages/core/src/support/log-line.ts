/**
 * How {@link ConsoleLogger} turns one entry into text: one line per entry, as pino would write it
 * (`LOOM_LOG=json`) or for a person (pretty). A stack is added only when asked for.
 */

/** A log entry after the logger merged its bindings: fields, the error if any, and the message. */
export interface LogRecord {
  level: 'debug' | 'info' | 'warn' | 'error';
  time: Date;
  msg: string;
  fields: Record<string, unknown>;
  err?: unknown;
  /** Print the error's stack (debug level, dead letters). */
  stack: boolean;
}

/** pino's numeric levels, so pino-pretty and log pipelines read Loom's JSON lines as pino's. */
const PINO_LEVEL = { debug: 20, info: 30, warn: 40, error: 50 } as const;

/** One JSON line with pino's shape: `level`, `time` (ms), `name`, the fields, `err`, `msg`. */
export function jsonLine(record: LogRecord): string {
  const out: Record<string, unknown> = { level: PINO_LEVEL[record.level], time: record.time.getTime(), name: 'loom', ...record.fields };
  if (record.err !== undefined) out.err = serializeError(record.err, record.stack);
  out.msg = record.msg;
  return safeStringify(out);
}

const COLORS = { debug: '\x1b[90m', info: '\x1b[32m', warn: '\x1b[33m', error: '\x1b[31m' } as const;
const DIM = '\x1b[2m';
const RESET = '\x1b[0m';

/** `12:00:03.120 INFO  [loom] message key=value err="Error: boom"`, plus the stack when asked. */
export function prettyLine(record: LogRecord, color: boolean): string {
  const time = record.time.toISOString().slice(11, 23);
  const level = record.level.toUpperCase().padEnd(5);
  const parts = Object.entries(record.fields)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${prettyValue(value)}`);
  if (record.err !== undefined) parts.push(`err=${prettyValue(errorSummary(record.err))}`);
  const fields = parts.join(' ');
  const paint = (code: string, text: string): string => (color ? `${code}${text}${RESET}` : text);
  let line = `${paint(DIM, time)} ${paint(COLORS[record.level], level)} [loom] ${record.msg}${fields ? ` ${paint(DIM, fields)}` : ''}`;
  const stack = record.stack && record.err instanceof Error ? stackBelowMessage(record.err) : undefined;
  if (stack) line += `\n${paint(DIM, stack)}`;
  return line;
}

function errorSummary(err: unknown): string {
  if (!(err instanceof Error)) return typeof err === 'string' ? err : safeStringify(err);
  const code = (err as { code?: unknown }).code;
  return `${err.name}: ${err.message}${code !== undefined ? ` (${typeof code === 'string' || typeof code === 'number' ? code : safeStringify(code)})` : ''}`;
}

/** The stack's frames (the first line repeats the message already printed), indented. */
function stackBelowMessage(err: Error): string | undefined {
  const frames = (err.stack ?? '').split('\n').filter((l) => /^\s+at /.test(l));
  return frames.length > 0 ? frames.map((l) => `    ${l.trim()}`).join('\n') : undefined;
}

/** pino's error serializer: type, message, code when present, stack only when asked. */
function serializeError(err: unknown, withStack: boolean): unknown {
  if (!(err instanceof Error)) return err;
  const out: Record<string, unknown> = { type: err.name, message: err.message };
  const code = (err as { code?: unknown }).code;
  if (code !== undefined) out.code = code;
  if (withStack && err.stack) out.stack = err.stack;
  return out;
}

function prettyValue(value: unknown): string {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (typeof value === 'string') return /^[\w.:/@+-]+$/.test(value) ? value : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint' || value === null) return String(value);
  if (value instanceof Error) return JSON.stringify(errorSummary(value));
  return safeStringify(value);
}

/** JSON.stringify that survives cycles, BigInt and throwing getters: a log line never throws. */
function safeStringify(value: unknown): string {
  const seen = new WeakSet<object>();
  try {
    return JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === 'bigint') return v.toString();
      if (v instanceof Error) return serializeError(v, false);
      if (typeof v === 'object' && v !== null) {
        if (seen.has(v)) return '[Circular]';
        seen.add(v);
      }
      return v;
    });
  } catch {
    return '"[unserializable]"';
  }
}
