import { JobFailedError } from './errors.js';

/** True for `Error`s, also from other realms (vm contexts, jest sandboxes) where `instanceof` fails. */
function isErrorLike(value: unknown): value is Error {
  return (
    value instanceof Error ||
    (typeof value === 'object' && value !== null && typeof (value as Error).message === 'string' && typeof (value as Error).name === 'string')
  );
}

function describe(value: unknown): string {
  try {
    const json = JSON.stringify(value);
    if (json !== undefined) return json.length > 500 ? `${json.slice(0, 500)}…` : json;
  } catch {
    // cycles or BigInt: fall through to String()
  }
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/**
 * Turns anything a handler threw into an `Error` with a non-empty message. Strings become the
 * message; `undefined`, `null` and objects get a message that says what was thrown. The original
 * value stays on `thrown` (and `cause`).
 */
export function toError(value: unknown): Error {
  if (isErrorLike(value)) return value;
  if (typeof value === 'string') {
    return new JobFailedError(value.trim() === '' ? 'The handler threw an empty string; throw an Error with a reason' : value, value);
  }
  if (value === undefined || value === null) {
    return new JobFailedError(`The handler threw ${value}; throw an Error with a reason`, value);
  }
  const message = typeof (value as { message?: unknown }).message === 'string' ? (value as { message: string }).message : '';
  return new JobFailedError(message.trim() !== '' ? message : `The handler threw a non-Error value: ${describe(value)}`, value);
}
