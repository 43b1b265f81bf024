import { MAX_JOB_LOG_LINE_CHARS, MAX_JOB_LOG_LINES, type JobLogLine } from '../store/job-record.js';
import type { Clock } from '../support/clock.js';
import type { Logger } from '../support/logger.js';

/**
 * `ctx.log` of one run: every line goes to the engine's logger as before, and the last
 * `MAX_JOB_LOG_LINES` (each cut at `MAX_JOB_LOG_LINE_CHARS`) are kept for the job's log tail,
 * which the runner writes to the store once the handler returns (`JobStore.appendLogs`).
 */
export class LogTail implements Logger {
  private readonly lines: JobLogLine[];

  constructor(
    private readonly target: Logger,
    private readonly clock: Clock,
    private readonly attempt: number,
    lines?: JobLogLine[],
  ) {
    this.lines = lines ?? [];
  }

  debug(obj: Record<string, unknown>, msg?: string): void {
    this.target.debug(obj, msg);
    this.keep('debug', msg);
  }

  info(obj: Record<string, unknown>, msg?: string): void {
    this.target.info(obj, msg);
    this.keep('info', msg);
  }

  warn(obj: Record<string, unknown>, msg?: string): void {
    this.target.warn(obj, msg);
    this.keep('warn', msg);
  }

  error(obj: Record<string, unknown>, msg?: string): void {
    this.target.error(obj, msg);
    this.keep('error', msg);
  }

  child(bindings: Record<string, unknown>): Logger {
    return new LogTail(this.target.child(bindings), this.clock, this.attempt, this.lines);
  }

  /** The lines kept so far, emptied: what the runner writes. */
  take(): JobLogLine[] {
    return this.lines.splice(0, this.lines.length);
  }

  private keep(level: JobLogLine['level'], msg: string | undefined): void {
    const text = typeof msg === 'string' ? msg : '';
    this.lines.push({
      at: this.clock.now(),
      level,
      msg: text.length > MAX_JOB_LOG_LINE_CHARS ? `${text.slice(0, MAX_JOB_LOG_LINE_CHARS - 1)}…` : text,
      attempt: this.attempt,
    });
    if (this.lines.length > MAX_JOB_LOG_LINES) this.lines.splice(0, this.lines.length - MAX_JOB_LOG_LINES);
  }
}
