import { MongoServerError } from 'mongodb';
import { LoomError } from '@loom/core';

/** MongoDB's duplicate-key error code (a unique index refused a write). */
export const DUPLICATE_KEY = 11000;

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
