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

/** Node's codes for a socket that failed under the driver: the network, not the server. */
const SOCKET_ERROR_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTCONN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'ERR_STREAM_DESTROYED',
  'ERR_STREAM_WRITE_AFTER_END',
]);

/**
 * A socket's own error, not wrapped in a `MongoNetworkError`. The driver (7.9) lets one through
 * when a connection drops while a command waits for the socket to drain: `Error: write ECONNRESET`,
 * which neither its retry logic nor its transactions (no `TransientTransactionError` label, so
 * `withTransaction` gives up without retrying, and its abort cannot reach the server) recognise.
 */
export function isSocketError(err: unknown): boolean {
  // Not `instanceof Error`: Node's own errors may come from another realm (a vm context, jest).
  if (typeof err !== 'object' || err === null || err instanceof MongoError) return false;
  const code = (err as NodeJS.ErrnoException).code;
  return typeof code === 'string' && SOCKET_ERROR_CODES.has(code);
}

/**
 * Whether a failed MongoStore operation may succeed if tried again. Network and server-selection
 * errors (a socket's own error too), errors carrying a retry label and the codes above are;
 * anything else the server said (a document over 16 MiB: 17419 / 10334, a validation failure, a
 * bad value) will fail the same way again, so the engine fails the attempt instead of retrying
 * the write until the lease ends.
 */
export function isTransientMongoError(err: unknown): boolean {
  if (LoomError.is(err)) return err.code === 'STORE_ERROR';
  if (err instanceof MongoNetworkError || err instanceof MongoServerSelectionError || isSocketError(err)) return true;
  if (err instanceof MongoError) {
    if (TRANSIENT_LABELS.some((label) => err.hasErrorLabel(label))) return true;
    return typeof err.code === 'number' && TRANSIENT_CODES.has(err.code);
  }
  return false;
}
