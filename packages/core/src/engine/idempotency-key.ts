import { InvalidIdempotencyKeyError } from '../support/errors.js';
import type { JobDefinition } from '../jobs/job-definition.js';

/** Longest key accepted: keys are indexed, and a business identity never needs more. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 1_024;

/**
 * The idempotency key of one enqueue: the explicit override, else the job's `idempotencyKey(payload)`,
 * else none. Anything but a non-empty string is refused.
 */
export function resolveIdempotencyKey(def: JobDefinition, payload: unknown, override: unknown): string | undefined {
  let key: unknown = override;
  if (override === undefined && def.idempotencyKey) {
    try {
      key = def.idempotencyKey(payload);
    } catch (err) {
      throw new InvalidIdempotencyKeyError(def.name, `the idempotencyKey function threw: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (key === undefined) throw new InvalidIdempotencyKeyError(def.name, 'the idempotencyKey function returned undefined');
  }
  if (key === undefined) return undefined;
  if (typeof key !== 'string') throw new InvalidIdempotencyKeyError(def.name, `got ${key === null ? 'null' : typeof key}, not a string`);
  if (key.trim() === '') throw new InvalidIdempotencyKeyError(def.name, 'it is empty');
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH)
    throw new InvalidIdempotencyKeyError(def.name, `it is ${key.length} characters, over ${MAX_IDEMPOTENCY_KEY_LENGTH}`);
  return key;
}
