import type { Logger } from '@loom/core';

/** One entry a {@link CaptureLogger} recorded. */
export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  /** The entry's fields, including the bindings of child loggers (e.g. `jobId`). */
  fields: Record<string, unknown>;
}

/**
 * A {@link Logger} that keeps entries in memory instead of printing them, so tests stay quiet and
 * can assert what was logged. Children share their parent's `entries`.
 */
export class CaptureLogger implements Logger {
  constructor(
    readonly entries: LogEntry[] = [],
    private readonly bindings: Record<string, unknown> = {},
  ) {}

  debug(obj: Record<string, unknown>, msg?: string): void {
    this.add('debug', obj, msg);
  }
  info(obj: Record<string, unknown>, msg?: string): void {
    this.add('info', obj, msg);
  }
  warn(obj: Record<string, unknown>, msg?: string): void {
    this.add('warn', obj, msg);
  }
  error(obj: Record<string, unknown>, msg?: string): void {
    this.add('error', obj, msg);
  }

  child(bindings: Record<string, unknown>): Logger {
    return new CaptureLogger(this.entries, { ...this.bindings, ...bindings });
  }

  /** Entries at `level` (and above, when `orAbove`). */
  at(level: LogEntry['level']): LogEntry[] {
    return this.entries.filter((e) => e.level === level);
  }

  private add(level: LogEntry['level'], obj: Record<string, unknown>, msg?: string): void {
    this.entries.push({ level, msg: msg ?? '', fields: { ...this.bindings, ...obj } });
  }
}
