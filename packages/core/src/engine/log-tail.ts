import { jobLogLineBytes, MAX_JOB_LOG_FIELDS_BYTES, MAX_JOB_LOG_LINE_CHARS, type JobLogLine } from '../store/job-record.js';
import type { Clock } from '../support/clock.js';
import { LoomError } from '../support/errors.js';
import type { Logger } from '../support/logger.js';

/** How much of its `ctx.log` a job keeps: its last `lines` lines, weighing at most `bytes` together (see `jobLogLineBytes`). */
export interface JobLogCaps {
  lines: number;
  bytes: number;
}

/** What a run's {@link LogBuffer} hands over when its handler returned: the lines to write, and how many of the tail to keep. */
export interface LogRest {
  lines: JobLogLine[];
  keep: number;
}

/** A run's buffered lines are written this long after the first of them (ms of the engine's clock), and when the handler returns. */
export const LOG_FLUSH_MS = 1_000;

/** What a run's {@link LogTail} writes through: `store.appendLogs` under the run's lease. */
export interface LogTailDeps {
  clock: Clock;
  caps: JobLogCaps;
  attempt: number;
  /** The tail the job already kept (from the claimed record): it counts against the caps. */
  prior: readonly JobLogLine[] | undefined;
  /** Appends `lines` and keeps the tail's last `keep` lines (fenced by the run's lease). */
  write: (lines: JobLogLine[], keep: number) => Promise<void>;
  /** A write failed: the lines are lost, the run goes on. */
  onError: (err: unknown, lines: number) => void;
}

/**
 * The kept tail of one run's `ctx.log`. Lines are buffered and written together: the first line
 * starts a {@link LOG_FLUSH_MS} timer, and what is left when the handler returns goes with the
 * run's completion (the same fenced write; with its outcome write otherwise), so a chatty handler
 * costs one store write a second, not one a line, and a short run none of its own. Writes are fenced: once one is refused (`LEASE_LOST`, the lease was
 * taken over) nothing more is written. The buffer mirrors the stored tail, so each write says how
 * many lines to keep and the caps hold across runs and engines.
 */
export class LogBuffer {
  /** Weights of the tail as it will stand once `pending` is written, oldest first (its last `pending.length` are `pending`). */
  private readonly weights: number[] = [];
  private weight = 0;
  private pending: JobLogLine[] = [];
  private cancelTimer: (() => void) | undefined;
  /** The last write, once there was one: most runs log nothing and make no promise here. */
  private writing: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly deps: LogTailDeps) {
    for (const line of deps.prior ?? []) this.weigh(jobLogLineBytes(line));
    this.trim();
  }

  add(level: JobLogLine['level'], obj: unknown, msg: unknown, bindings: Record<string, unknown> | undefined): void {
    if (this.closed) return;
    const text = typeof msg === 'string' ? msg : '';
    const line: JobLogLine = {
      at: this.deps.clock.now(),
      level,
      msg: text.length > MAX_JOB_LOG_LINE_CHARS ? `${text.slice(0, MAX_JOB_LOG_LINE_CHARS - 1)}…` : text,
      attempt: this.deps.attempt,
    };
    const fields = toFields(bindings ? { ...bindings, ...(isObject(obj) ? obj : {}) } : obj);
    if (fields !== undefined) line.fields = fields;
    let bytes = jobLogLineBytes(line);
    if (bytes > this.deps.caps.bytes && line.fields !== undefined) {
      delete line.fields;
      bytes = jobLogLineBytes(line);
    }
    this.pending.push(line);
    this.weigh(bytes);
    this.trim();
    this.cancelTimer ??= this.deps.clock.setTimer(() => {
      this.cancelTimer = undefined;
      void this.flush();
    }, LOG_FLUSH_MS);
  }

  /** Writes the buffered lines now (after any write in flight). */
  flush(): Promise<void> {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    if (this.pending.length > 0) {
      const lines = this.pending;
      const keep = this.weights.length;
      this.pending = [];
      this.writing = this.writing === undefined ? this.write(lines, keep) : this.writing.then(() => this.write(lines, keep));
    }
    return this.writing ?? Promise.resolve();
  }

  /**
   * The handler returned: keeps no later line (a handler still running after its timeout), waits
   * for a write made before and hands over what is left, for the run's completion to carry (one
   * write for both). Undefined when nothing is left. A promise only when a write was made: a run
   * that wrote none (most) gets its rest at once, without a promise per run.
   */
  drain(): LogRest | undefined | Promise<LogRest | undefined> {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.closed = true;
    return this.writing === undefined ? this.rest() : this.writing.then(() => this.rest());
  }

  private rest(): LogRest | undefined {
    if (this.pending.length === 0) return undefined;
    const rest = { lines: this.pending, keep: this.weights.length };
    this.pending = [];
    return rest;
  }

  /** Writes lines {@link drain} handed over that no completion carried (the run failed, slept, was released). */
  async send(rest: LogRest | undefined): Promise<void> {
    if (rest !== undefined) await this.write(rest.lines, rest.keep);
  }

  /** Drops what is buffered and keeps nothing more (the run ended without {@link drain}). */
  discard(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.pending = [];
    this.closed = true;
  }

  private async write(lines: JobLogLine[], keep: number): Promise<void> {
    try {
      await this.deps.write(lines, keep);
    } catch (err) {
      if (LoomError.is(err, 'LEASE_LOST')) this.closed = true;
      this.deps.onError(err, lines.length);
    }
  }

  private weigh(bytes: number): void {
    this.weights.push(bytes);
    this.weight += bytes;
  }

  /** Drops the oldest lines (stored or pending) past the caps; the newest line is always kept. */
  private trim(): void {
    const { lines, bytes } = this.deps.caps;
    while (this.weights.length > 1 && (this.weights.length > lines || this.weight > bytes)) {
      this.weight -= this.weights.shift()!;
      if (this.pending.length > this.weights.length) this.pending.shift();
    }
  }
}

/** Where a {@link LogTail} finds its run's buffer: made on the first line (a run object, not a closure per run). */
export interface LogBufferSource {
  logBuffer(): LogBuffer;
}

/**
 * `ctx.log` of one run: every line goes to the engine's logger as before and to the run's
 * {@link LogBuffer}, which `source` gives (the runner makes it on the first line).
 */
export class LogTail implements Logger {
  constructor(
    private readonly target: Logger,
    private readonly source: LogBufferSource,
    private readonly bindings?: Record<string, unknown>,
  ) {}

  debug(obj: Record<string, unknown>, msg?: string): void {
    this.target.debug(obj, msg);
    this.source.logBuffer().add('debug', obj, msg, this.bindings);
  }

  info(obj: Record<string, unknown>, msg?: string): void {
    this.target.info(obj, msg);
    this.source.logBuffer().add('info', obj, msg, this.bindings);
  }

  warn(obj: Record<string, unknown>, msg?: string): void {
    this.target.warn(obj, msg);
    this.source.logBuffer().add('warn', obj, msg, this.bindings);
  }

  error(obj: Record<string, unknown>, msg?: string): void {
    this.target.error(obj, msg);
    this.source.logBuffer().add('error', obj, msg, this.bindings);
  }

  child(bindings: Record<string, unknown>): Logger {
    return new LogTail(this.target.child(bindings), this.source, { ...this.bindings, ...bindings });
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A logged object as JSON data for the job's tail: errors as `{ name, message, code }`, BigInts as
 * strings, anything JSON drops (functions, undefined) dropped; over {@link MAX_JOB_LOG_FIELDS_BYTES}
 * it becomes `{ truncated: '<the start of its JSON>…' }`. Undefined when there is nothing to keep.
 */
export function toFields(obj: unknown): Record<string, unknown> | undefined {
  if (!isObject(obj)) return undefined;
  let json: string | undefined;
  try {
    json = JSON.stringify(obj, (_key, value: unknown) => {
      if (value instanceof Error) {
        const code = (value as { code?: unknown }).code;
        return { name: value.name, message: value.message, ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}) };
      }
      return typeof value === 'bigint' ? value.toString() : value;
    });
  } catch {
    return { unserializable: true };
  }
  if (json === undefined || json === '{}') return undefined;
  if (Buffer.byteLength(json) > MAX_JOB_LOG_FIELDS_BYTES) return { truncated: `${json.slice(0, 500)}…` };
  const parsed: unknown = JSON.parse(json);
  return isObject(parsed) ? parsed : undefined;
}
