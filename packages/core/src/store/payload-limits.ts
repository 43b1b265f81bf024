/**
 * How large a payload or result a store keeps, and from what size it keeps one outside the job's
 * record (issue 33, "Large payloads and results"). One module owns the rule: the engine checks
 * payloads and results against the store's limits before any write, and stores check again.
 */
import { LoomError, PayloadTooLargeError } from '../support/errors.js';
import { MAX_PLAIN_DATA_BYTES, plainDataSize } from '../support/plain-data.js';

/** A store's limits on payloads and results, in bytes of BSON (or the plain-data estimate of it). */
export interface PayloadLimits {
  /** The largest payload or result the store accepts; a larger one is refused with `PAYLOAD_TOO_LARGE`. */
  maxPayloadSize: number;
  /**
   * Values above this size are kept outside the job's record (MongoStore: in GridFS), so they do
   * not count against its 16 MiB document limit. A store that keeps everything inline (MemoryStore)
   * states the same threshold, so the engine's record-size check answers the same on every store.
   */
  offloadThreshold: number;
}

/** Where a store keeps a value outside the job's record, and its size. */
export interface OffloadedValue {
  /** The store's id of the stored value (MongoStore: the GridFS file's id, hex). */
  fileId: string;
  /** Bytes serialized (BSON). */
  size: number;
}

/** Default `maxPayloadSize`: 64 MiB. */
export const DEFAULT_MAX_PAYLOAD_SIZE = 64 * 1024 * 1024;
/** Default `offloadThreshold`: 256 KiB. */
export const DEFAULT_OFFLOAD_THRESHOLD = 256 * 1024;
/** The smallest `offloadThreshold`: below this a reference costs about what the value does. */
export const MIN_OFFLOAD_THRESHOLD = 1024;
/**
 * The largest `offloadThreshold`: a payload and a result each just under it still leave a job's
 * record room for its steps, errors and logs under MongoDB's 16 MiB.
 */
export const MAX_OFFLOAD_THRESHOLD = 4 * 1024 * 1024;
/** What an offloaded value weighs in its job's record: the reference `{ fileId, size }`. */
export const OFFLOADED_REFERENCE_BYTES = 64;

/** The limits a store states; a store that states none keeps everything inline up to 16 MiB, as before issue 33. */
export function payloadLimitsOf(store: { payloadLimits?: PayloadLimits }): PayloadLimits {
  return store.payloadLimits ?? { maxPayloadSize: MAX_PLAIN_DATA_BYTES, offloadThreshold: Number.POSITIVE_INFINITY };
}

/**
 * Checks and defaults the `offloadThreshold` and `maxPayloadSize` options of a store; `store` names
 * it in the error (`INVALID_ARGUMENT`, naming the option).
 */
export function resolvePayloadLimits(store: string, options: { offloadThreshold?: unknown; maxPayloadSize?: unknown }): PayloadLimits {
  const bad = (option: string, detail: string): LoomError => new LoomError('INVALID_ARGUMENT', `${store} option "${option}" ${detail}`);
  if (options.offloadThreshold === false) {
    // Nothing offloaded: every value is inline, so one document's 16 MiB bounds it.
    const max = options.maxPayloadSize ?? MAX_PLAIN_DATA_BYTES;
    if (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1 || max > MAX_PLAIN_DATA_BYTES)
      throw bad('maxPayloadSize', `must be a whole number of bytes from 1 to ${MAX_PLAIN_DATA_BYTES} with offloadThreshold: false, got ${JSON.stringify(max)}`);
    return { maxPayloadSize: max, offloadThreshold: Number.POSITIVE_INFINITY };
  }
  const threshold = options.offloadThreshold ?? DEFAULT_OFFLOAD_THRESHOLD;
  if (typeof threshold !== 'number' || !Number.isInteger(threshold) || threshold < MIN_OFFLOAD_THRESHOLD || threshold > MAX_OFFLOAD_THRESHOLD)
    throw bad(
      'offloadThreshold',
      `must be a whole number of bytes from ${MIN_OFFLOAD_THRESHOLD} to ${MAX_OFFLOAD_THRESHOLD}, or false, got ${JSON.stringify(threshold)}`,
    );
  const max = options.maxPayloadSize ?? DEFAULT_MAX_PAYLOAD_SIZE;
  if (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1)
    throw bad('maxPayloadSize', `must be a whole number of bytes, at least 1, got ${JSON.stringify(max)}`);
  return { maxPayloadSize: max, offloadThreshold: threshold };
}

/**
 * The refusal of a value over `limits.maxPayloadSize`, or null. `size` is the value's size when the
 * caller measured it already (a store measures BSON); otherwise the plain-data estimate is used.
 */
export function payloadTooLarge(subject: string | (() => string), value: unknown, limits: PayloadLimits, size?: number): PayloadTooLargeError | null {
  if (value === undefined) return null;
  const bytes = size ?? plainDataSize(value);
  if (bytes === null || bytes <= limits.maxPayloadSize) return null;
  return new PayloadTooLargeError(typeof subject === 'string' ? subject : subject(), bytes, limits.maxPayloadSize);
}

/** What a value of `size` bytes weighs in its job's record under `limits`: its reference when it is offloaded. */
export function recordBytesOf(size: number, limits: PayloadLimits): number {
  return size > limits.offloadThreshold ? OFFLOADED_REFERENCE_BYTES : size;
}
