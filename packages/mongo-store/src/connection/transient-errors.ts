import { MongoError, MongoNetworkError, MongoServerSelectionError } from 'mongodb';
import { LoomError } from '@loom/core';

/**
 * Server error codes that say "try again": the primary moved, the node is shutting down, a network
 * hiccup seen by the server, a write conflict, a lock or time limit. The list of MongoDB's
 * retryable-writes specification, plus the conflicts and limits a retry can get past.
 */
const TRANSIENT_CODES = new Set([
  6, // HostUnreachable
  7, // HostNotFound
  24, // LockTimeout
  46, // LockBusy
  50, // MaxTimeMSExpired
  89, // NetworkTimeout
  91, // ShutdownInProgress
  112, // WriteConflict
  189, // PrimarySteppedDown
  251, // NoSuchTransaction (the transaction was aborted under us)
  262, // ExceededTimeLimit
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);

const TRANSIENT_LABELS = ['RetryableWriteError', 'TransientTransactionError', 'UnknownTransactionCommitResult', 'ResetPool', 'PoolRequestedRetry'];

/**
 * Whether a failed MongoStore operation may succeed if tried again. Network and server-selection
 * errors, errors carrying a retry label and the codes above are; anything else the server said
 * (a document over 16 MiB: 17419 / 10334, a validation failure, a bad value) will fail the same
 * way again, so the engine fails the attempt instead of retrying the write until the lease ends.
 */
export function isTransientMongoError(err: unknown): boolean {
  if (LoomError.is(err)) return err.code === 'STORE_ERROR';
  if (err instanceof MongoNetworkError || err instanceof MongoServerSelectionError) return true;
  if (err instanceof MongoError) {
    if (TRANSIENT_LABELS.some((label) => err.hasErrorLabel(label))) return true;
    return typeof err.code === 'number' && TRANSIENT_CODES.has(err.code);
  }
  return false;
}
