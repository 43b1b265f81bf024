import type { Logger } from './logger.js';

/**
 * `parent.child(bindings())`, made on the first entry. A run's logger is usually never written to
 * (a job that succeeds logs nothing), and with pino a child logger serialises its bindings at
 * creation, which would be paid on every run; the bindings themselves are made then too.
 */
export class LazyChildLogger implements Logger {
  private made: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: () => Record<string, unknown>,
  ) {}

  private get logger(): Logger {
    return (this.made ??= this.parent.child(this.bindings()));
  }

  debug(obj: Record<string, unknown>, msg?: string): void {
    this.logger.debug(obj, msg);
  }
  info(obj: Record<string, unknown>, msg?: string): void {
    this.logger.info(obj, msg);
  }
  warn(obj: Record<string, unknown>, msg?: string): void {
    this.logger.warn(obj, msg);
  }
  error(obj: Record<string, unknown>, msg?: string): void {
    this.logger.error(obj, msg);
  }
  child(bindings: Record<string, unknown>): Logger {
    return this.logger.child(bindings);
  }
}
