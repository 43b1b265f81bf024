import { jsonLine, prettyLine, type LogRecord } from './log-line.js';

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

/** Options of {@link ConsoleLogger}. */
export interface ConsoleLoggerOptions {
  /** Entries below it are dropped. @default `LOOM_LOG_LEVEL`, else 'info' */
  level?: LogLevel;
  /** `'json'`: one pino-shaped JSON object per line. @default 'json' when `LOOM_LOG=json`, else 'pretty' */
  format?: 'pretty' | 'json';
  /** Colours in pretty lines. @default stdout is a TTY and `NO_COLOR` is unset */
  color?: boolean;
  bindings?: Record<string, unknown>;
  /** Where each line goes. @default stdout (stderr for pretty warnings and errors) */
  write?: (line: string, level: Exclude<LogLevel, 'silent'>) => void;
  /** @default the wall clock */
  now?: () => Date;
}

type Settings = Required<Omit<ConsoleLoggerOptions, 'bindings'>>;

/**
 * The default logger: one line per entry, pretty for a person (coloured on a TTY) or JSON with
 * `LOOM_LOG=json` (pino's shape: numeric `level`, `time` in ms, `msg`, `err: { type, message }`).
 * A stack is printed only at level debug and for dead letters (entries with `event: 'job:dead'`);
 * elsewhere an error shows as its name, message and code.
 */
export class ConsoleLogger implements Logger {
  private readonly settings: Settings;
  private readonly bindings: Record<string, unknown>;

  constructor(options: ConsoleLoggerOptions = {}) {
    this.settings = resolveSettings(options);
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
    return new ConsoleLogger({ ...this.settings, bindings: { ...this.bindings, ...bindings } });
  }

  private write(level: Exclude<LogLevel, 'silent'>, obj: Record<string, unknown>, msg?: string): void {
    const { settings } = this;
    if (RANK[level] < RANK[settings.level]) return;
    const { err, ...fields } = { ...this.bindings, ...obj };
    const record: LogRecord = { level, time: settings.now(), msg: msg ?? '', fields, err, stack: settings.level === 'debug' || fields.event === 'job:dead' };
    settings.write(settings.format === 'json' ? jsonLine(record) : prettyLine(record, settings.color), level);
  }
}

function resolveSettings(options: ConsoleLoggerOptions): Settings {
  const envLevel = process.env.LOOM_LOG_LEVEL as LogLevel | undefined;
  const format = options.format ?? (process.env.LOOM_LOG === 'json' ? 'json' : 'pretty');
  return {
    level: options.level ?? (envLevel && envLevel in RANK ? envLevel : 'info'),
    format,
    color: options.color ?? (process.stdout.isTTY === true && !process.env.NO_COLOR),
    now: options.now ?? (() => new Date()),
    write:
      options.write ?? ((line, level) => (format === 'pretty' && (level === 'warn' || level === 'error') ? process.stderr : process.stdout).write(`${line}\n`)),
  };
}
