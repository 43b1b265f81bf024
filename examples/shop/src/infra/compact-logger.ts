import type { Logger, LogLevel } from '@loom/core';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/**
 * A console logger that writes one short line per entry (an error's message, not its stack, unless
 * the level is debug), through `write` so a live status line can stay at the bottom.
 */
export class CompactLogger implements Logger {
  constructor(
    private readonly write: (line: string) => void = (line) => console.log(line),
    private readonly level: LogLevel = (process.env.LOG_LEVEL as LogLevel | undefined) ?? 'info',
    private readonly bindings: Record<string, unknown> = {},
  ) {}

  debug(obj: Record<string, unknown>, msg?: string): void {
    this.log('debug', obj, msg);
  }
  info(obj: Record<string, unknown>, msg?: string): void {
    this.log('info', obj, msg);
  }
  warn(obj: Record<string, unknown>, msg?: string): void {
    this.log('warn', obj, msg);
  }
  error(obj: Record<string, unknown>, msg?: string): void {
    this.log('error', obj, msg);
  }

  child(bindings: Record<string, unknown>): Logger {
    return new CompactLogger(this.write, this.level, { ...this.bindings, ...bindings });
  }

  private log(level: Exclude<LogLevel, 'silent'>, obj: Record<string, unknown>, msg = ''): void {
    if (RANK[level] < RANK[this.level]) return;
    const fields = { ...this.bindings, ...obj };
    const where = typeof fields.job === 'string' ? `[${fields.job}] ` : '';
    const err = fields.err instanceof Error ? fields.err : undefined;
    const detail = err && this.level === 'debug' ? `\n${err.stack}` : err && !msg.includes(err.message) ? `: ${err.message}` : '';
    this.write(`${new Date().toISOString().slice(11, 23)} ${level.toUpperCase().padEnd(5)} ${where}${msg}${detail}`);
  }
}
