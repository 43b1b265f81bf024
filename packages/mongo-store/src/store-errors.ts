import { MongoServerError } from 'mongodb';
import { LoomError } from '@loom/core';

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

/** The error every transactional feature raises on a deployment without transactions. */
export function transactionsUnsupported(feature: string): LoomError {
  return new LoomError(
    'TRANSACTIONS_UNSUPPORTED',
    `${feature} needs MongoDB transactions, which need a replica set (or sharded cluster); this server is a standalone. ` +
      'Run mongod as a replica set (a single node with --replSet is enough) or do not use { session } / ctx.transaction.',
  );
}

/** An existing index that Loom cannot use and will not silently replace. */
export function indexConflict(collection: string, indexName: string, detail: string): LoomError {
  return new LoomError(
    'STORE_ERROR',
    `MongoStore cannot start: index "${indexName}" on collection "${collection}" ${detail}. ` +
      'Drop that index (Loom recreates its own) or use another collectionPrefix.',
  );
}
