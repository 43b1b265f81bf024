/** What one `loom doctor` check found. */

export type CheckStatus = 'pass' | 'warn' | 'fail';

/** One line of the report: `message` says what was found and, for warn and fail, what to do. */
export interface CheckResult {
  name: string;
  status: CheckStatus;
  message: string;
  /** Figures behind the message (versions, milliseconds, index names), for `--json`. */
  detail?: Record<string, unknown>;
}

export const pass = (name: string, message: string, detail?: Record<string, unknown>): CheckResult => result(name, 'pass', message, detail);
export const warn = (name: string, message: string, detail?: Record<string, unknown>): CheckResult => result(name, 'warn', message, detail);
export const fail = (name: string, message: string, detail?: Record<string, unknown>): CheckResult => result(name, 'fail', message, detail);

function result(name: string, status: CheckStatus, message: string, detail: Record<string, unknown> | undefined): CheckResult {
  return detail === undefined ? { name, status, message } : { name, status, message, detail };
}

/** The deployment's kind, as `hello` tells it. */
export type Topology = 'replica set' | 'sharded' | 'standalone';
