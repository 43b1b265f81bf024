import { InvalidFlowKeyError } from '../support/errors.js';
import type { JobDefinition } from '../jobs/job-definition.js';
import { MAX_FLOW_KEY_LENGTH } from '../store/flow.js';
import type { NewJob } from '../store/job-record.js';

type KeyOption = 'rateLimit.key' | 'group.key' | 'debounce.key';

/** Calls one key function; anything but a non-empty string of bounded length is refused. */
function keyOf(def: JobDefinition, option: KeyOption, fn: (payload: unknown) => string, payload: unknown): string {
  let key: unknown;
  try {
    key = fn(payload);
  } catch (err) {
    throw new InvalidFlowKeyError(def.name, option, `threw: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (typeof key !== 'string') throw new InvalidFlowKeyError(def.name, option, `returned ${key === null ? 'null' : typeof key}, not a string`);
  if (key === '') throw new InvalidFlowKeyError(def.name, option, 'returned an empty string');
  if (key.length > MAX_FLOW_KEY_LENGTH) throw new InvalidFlowKeyError(def.name, option, `returned ${key.length} characters, over ${MAX_FLOW_KEY_LENGTH}`);
  return key;
}

/**
 * The flow keys of one enqueue, from the job's `rateLimit.key`, `group.key` and `debounce.key`
 * (each called with the checked payload). Stored with the job: the store groups, limits and
 * debounces by them without ever calling user code.
 */
export function resolveFlowKeys(def: JobDefinition, payload: unknown): Pick<NewJob, 'rateLimitKey' | 'groupKey' | 'debounceKey'> {
  const keys: Pick<NewJob, 'rateLimitKey' | 'groupKey' | 'debounceKey'> = {};
  if (def.rateLimit?.key) keys.rateLimitKey = keyOf(def, 'rateLimit.key', def.rateLimit.key, payload);
  if (def.group) keys.groupKey = keyOf(def, 'group.key', def.group.key, payload);
  if (def.debounce) keys.debounceKey = keyOf(def, 'debounce.key', def.debounce.key, payload);
  return keys;
}
