import { backoffDelay, customBackoffDelay, DEFAULT_BACKOFF, type RandomSource } from '../jobs/backoff.js';
import { LoomError } from '../support/errors.js';
import type { JobDefinition } from '../jobs/job-definition.js';

/** What to do after a failed attempt. */
export type FailureDecision = { kind: 'retry'; delayMs: number } | { kind: 'dead'; reason: string };

/**
 * True for errors that must not be retried: `PermanentError`, a payload that fails its schema, and
 * a transaction on a store (or deployment) without transactions, or in a sandboxed handler,
 * which no retry can change.
 */
export function isPermanent(error: Error): boolean {
  return (
    LoomError.is(error, 'PERMANENT') ||
    LoomError.is(error, 'INVALID_PAYLOAD') ||
    LoomError.is(error, 'TRANSACTIONS_UNSUPPORTED') ||
    LoomError.is(error, 'SANDBOX_UNSUPPORTED') ||
    error.name === 'PermanentError'
  );
}

/**
 * Decides between a retry (with its backoff delay) and the dead letters. A custom backoff function
 * that throws or returns a bad duration falls back to the default strategy; `onBackoffError` hears
 * about it so it can be logged.
 */
export function decideAfterFailure(
  def: JobDefinition,
  attempt: number,
  maxAttempts: number,
  error: Error,
  message: string,
  random: RandomSource,
  onBackoffError: (err: unknown) => void,
): FailureDecision {
  if (isPermanent(error)) return { kind: 'dead', reason: message };
  if (attempt >= maxAttempts) return { kind: 'dead', reason: `${message} (failed ${attempt} of ${maxAttempts} attempts)` };
  if (typeof def.backoff === 'function') {
    try {
      return { kind: 'retry', delayMs: customBackoffDelay(def.backoff, attempt, error) };
    } catch (err) {
      onBackoffError(err);
      return { kind: 'retry', delayMs: backoffDelay(DEFAULT_BACKOFF, attempt, random) };
    }
  }
  return { kind: 'retry', delayMs: backoffDelay(def.backoff, attempt, random) };
}
