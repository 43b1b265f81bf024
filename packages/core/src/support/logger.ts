/**
 * The logging interface Loom writes to. It is the subset of pino's API Loom uses, so a pino logger
 * can be passed as is: `(obj, msg)` calls and `child(bindings)`.
 */
export interface Logger {
  debug(obj: Record<string, unknown>, msg?: string): void;
  info(obj: Record<string, unknown>, msg?: string): void;
  warn(obj: Record<string, unknown>, msg?: string): void;
  error(obj: Record<string, unknown>, msg?: string): void;
  /** A logger that adds `bindings` to every entry (Loom binds `jobId`, `job` and `attempt`). */
  child(bindings: Record<string, unknown>): Logger;
}

/** Levels of {@link ConsoleLogger}, lowest first. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** The default logger: one line per entry on the console, entries below `level` dropped. */
export class ConsoleLogger implements Logger {
  private readonly level: LogLevel;
  private readonly bindings: Record<string, unknown>;

  constructor(options: { level?: LogLevel; bindings?: Record<string, unknown> } = {}) {
    this.level = options.level ?? 'info';
    this.bindings = options.bindings ?? {};
  }

  debug(obj: Record<string, unknown>, msg?: string): void {
    this.write('debug', obj, msg);
  }
  info(obj: Record<string, unknown>, msg?: string): void {
    this.write('info', obj, msg);
  }
  warn(obj: Record<string, unknown>, msg?: string): void {
    this.write('warn', obj, msg);
  }
  error(obj: Record<string, unknown>, msg?: string): void {
    this.write('error', obj, msg);
  }

  child(bindings: Record<string, unknown>): Logger {
    return new ConsoleLogger({ level: this.level, bindings: { ...this.bindings, ...bindings } });
  }

  private write(level: Exclude<LogLevel, 'silent'>, obj: Record<string, unknown>, msg?: string): void {
    if (RANK[level] < RANK[this.level]) return;
    const fields = { ...this.bindings, ...obj };
    const err = fields.err;
    delete fields.err;
    const line = `[loom] ${level.toUpperCase()} ${msg ?? ''}`;
    const extra: unknown[] = Object.keys(fields).length > 0 ? [fields] : [];
    if (err !== undefined) extra.push(err instanceof Error ? err.stack ?? err.message : err);
    const sink = level === 'error' ? console.error : level === 'warn' ? console.warn : console.log;
    sink(line, ...extra);
  }
}
