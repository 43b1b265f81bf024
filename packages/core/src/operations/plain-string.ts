import { InvalidArgumentError } from '../support/errors.js';

/**
 * `value` if it is a non-empty string; otherwise an `INVALID_ARGUMENT` naming `argument`. An object
 * here is how a query operator (`{ "$ne": null }`) arrives from JSON: it is refused, never passed on.
 */
export function plainString(value: unknown, argument: string, consequence = 'nothing changed'): string {
  if (typeof value === 'string' && value !== '') return value;
  const got = value !== null && typeof value === 'object' ? 'an object (query operators are not accepted)' : (JSON.stringify(value) ?? typeof value);
  throw new InvalidArgumentError(argument, `must be a non-empty string, got ${got}; ${consequence}`);
}
