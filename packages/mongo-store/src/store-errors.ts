import { MongoServerError } from 'mongodb';
import { LoomError } from '@loom/core';

/**
 * Every error MongoStore raises of its own, one class per code (the fenced-write refusals
 * `LEASE_LOST` and `CANCELLED`, and `TOO_MANY_SIGNALS`, are core's own classes, shared by every
 * store). Tell them apart by code, `LoomError.is(err, 'STORE_UNREACHABLE')`, never `instanceof`:
 * each message says what to do.
 */

/** `INVALID_ARGUMENT`: a malformed option, id, lease, name or list; nothing was read or written. */
export class StoreArgumentError extends LoomError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('INVALID_ARGUMENT', message, options);
  }
}

/** `INVALID_IDEMPOTENCY_KEY`: a job's idempotency key is not a non-empty string; nothing was enqueued. */
export class IdempotencyKeyError extends LoomError {
  constructor(got: string) {
    super('INVALID_IDEMPOTENCY_KEY', `Idempotency keys must be non-empty strings, got ${got}; nothing was enqueued`);
  }
}

/**
 * `STORE_ERROR`: the server refused what the store asked (an index in the way, a statement of a
 * batch, a malformed reply), or a conditional operation kept losing races. The message says
 * whether to retry or what to fix.
 */
export class StoreOperationError extends LoomError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('STORE_ERROR', message, options);
  }
}

/** `STORE_UNREACHABLE`: `init()` found no server within `connectTimeout` (see connection/reachability.ts). */
export class StoreUnreachableError extends LoomError {
  constructor(where: string, timeoutMs: number, reason: string, cause?: unknown) {
    const detail = reason.split('\n')[0]!.slice(0, 200);
    super(
      'STORE_UNREACHABLE',
      `MongoStore cannot reach MongoDB at ${where} within ${timeoutMs} ms (${detail}). ` +
        'Check that mongod is running and reachable from this machine (host, port, DNS, firewall), the replica set name, TLS and credentials; ' +
        "for a slow network raise MongoStore's connectTimeout.",
      cause === undefined ? undefined : { cause },
    );
  }
}

/** `SHARD_KEY_MISMATCH`: a collection of Loom's is sharded on a key Loom's commands cannot target. */
export class ShardKeyError extends LoomError {
  constructor(message: string) {
    super('SHARD_KEY_MISMATCH', message);
  }
}

/** `TRANSACTIONS_UNSUPPORTED`: a transactional feature on a standalone server. */
export class ReplicaSetRequiredError extends LoomError {
  constructor(feature: string) {
    super(
      'TRANSACTIONS_UNSUPPORTED',
      `${feature} needs MongoDB transactions, which need a replica set (or sharded cluster); this server is a standalone. ` +
        'Run mongod as a replica set (a single node with --replSet is enough) or do not use { session } / ctx.transaction.',
    );
  }
}

/** The error every transactional feature raises on a deployment without transactions. */
export function transactionsUnsupported(feature: string): LoomError {
  return new ReplicaSetRequiredError(feature);
}

/** An existing index that Loom cannot use and will not silently replace. */
export function indexConflict(collection: string, indexName: string, detail: string): LoomError {
  return new StoreOperationError(
    `MongoStore cannot start: index "${indexName}" on collection "${collection}" ${detail}. ` +
      'Drop that index (Loom recreates its own) or use another collectionPrefix.',
  );
}

/** A loud end to a conditional loop that kept losing races (it should never happen in practice). */
export function tooManyRounds(operation: string, jobId: string): LoomError {
  return new StoreOperationError(`${operation} on job ${jobId}: the job kept changing under this operation; retry`);
}

/** MongoDB's duplicate-key error code (a unique index refused a write). */
export const DUPLICATE_KEY = 11000;

/** MongoDB's error code for a command that ran past its `maxTimeMS`. */
export const MAX_TIME_MS_EXPIRED = 50;

/** True when `err` (or one of its write errors, for a bulk write) says the command ran past its `maxTimeMS`. */
export function isMaxTimeExpired(err: unknown): boolean {
  if (!(err instanceof MongoServerError)) return false;
  if (err.code === MAX_TIME_MS_EXPIRED) return true;
  const writeErrors = (err as { writeErrors?: unknown }).writeErrors;
  const list = Array.isArray(writeErrors) ? writeErrors : writeErrors === undefined ? [] : [writeErrors];
  return list.some((e) => (e as { code?: unknown })?.code === MAX_TIME_MS_EXPIRED);
}

/** True when `err` is a duplicate-key error. */
export function isDuplicateKey(err: unknown): boolean {
  return err instanceof MongoServerError && err.code === DUPLICATE_KEY;
}
