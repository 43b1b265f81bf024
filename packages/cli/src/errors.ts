/**
 * The CLI's errors, each with a stable `code`: what `loom` reports and the exit status it ends
 * with (see `USAGE` in usage.ts). Errors from core and the store keep their own codes.
 */

/** A bad invocation: the command line is wrong, so nothing was read or changed. Exit 2. */
export class UsageError extends Error {
  readonly code = 'CLI_USAGE';
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The thing asked for does not exist or cannot change. Exit 1. */
export class RefusedError extends Error {
  readonly code = 'CLI_REFUSED';
  constructor(message: string) {
    super(message);
    this.name = 'RefusedError';
  }
}

/** The database cannot be reached. Exit 2. */
export class UnreachableError extends Error {
  readonly code = 'CLI_UNREACHABLE';
  constructor(message: string) {
    super(message);
    this.name = 'UnreachableError';
  }
}
