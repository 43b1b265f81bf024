/**
 * The error labels mongod attaches to a failed command (src/mongo/db/error_labels.cpp): drivers
 * decide from them whether to retry a write (RetryableWriteError), a whole transaction
 * (TransientTransactionError) or resume a change stream (ResumableChangeStreamError,
 * NonResumableChangeStreamError). UnknownTransactionCommitResult is the driver's to add.
 */
import type { Doc } from './values.js';

/** mongod's RetriableError category. */
const RETRIABLE = new Set([6, 7, 89, 91, 134, 189, 262, 317, 358, 384, 402, 9001, 10107, 11600, 11602, 13435, 13436, 50915, 91331]);
const NETWORK = new Set([6, 7, 89, 317, 384, 9001]);
const SNAPSHOT = new Set([239, 246, 250, 272]);
const NEED_RETARGETTING = new Set([150, 13388]);
const NON_RESUMABLE_CHANGE_STREAM = new Set([280, 286]);
const ALWAYS_TRANSIENT = new Set([112, 24, 267, 343, 249]);
const COMMIT_OR_ABORT = new Set(['commitTransaction', 'abortTransaction']);

export function isRetriableCode(code: number): boolean {
  return RETRIABLE.has(code);
}

export interface LabelContext {
  commandName: string;
  body: Doc;
  code?: number;
  writeConcernErrorCode?: number;
  /** The command is an aggregate opening, or a getMore on, a change stream cursor. */
  changeStream: boolean;
  /** The command wrote nothing (NoWritesPerformed for retryable writes). */
  noWritesPerformed: boolean;
}

function isTransientTransactionError(code: number, hasWriteConcernError: boolean, commitOrAbort: boolean): boolean {
  if (code === 358) return false;
  if (ALWAYS_TRANSIENT.has(code)) return true;
  let transient = SNAPSHOT.has(code) || NEED_RETARGETTING.has(code);
  if (commitOrAbort) transient ||= code === 251 && !hasWriteConcernError;
  else transient ||= RETRIABLE.has(code) || code === 251;
  return transient;
}

export function errorLabels(ctx: LabelContext): string[] {
  const labels: string[] = [];
  const hasTxnNumber = ctx.body.txnNumber !== undefined;
  const inTransaction = hasTxnNumber && ctx.body.autocommit !== undefined;
  const commitOrAbort = COMMIT_OR_ABORT.has(ctx.commandName);
  let transientOrRetryable = false;
  if (ctx.code !== undefined && inTransaction && isTransientTransactionError(ctx.code, ctx.writeConcernErrorCode !== undefined, commitOrAbort)) {
    labels.push('TransientTransactionError');
    transientOrRetryable = true;
  } else if ((hasTxnNumber && !inTransaction) || (inTransaction && commitOrAbort)) {
    const retriable =
      (ctx.code !== undefined && RETRIABLE.has(ctx.code)) || (ctx.writeConcernErrorCode !== undefined && RETRIABLE.has(ctx.writeConcernErrorCode));
    if (retriable) {
      labels.push('RetryableWriteError');
      transientOrRetryable = true;
      if (ctx.noWritesPerformed) labels.push('NoWritesPerformed');
    }
  }
  const code = ctx.code;
  const resumable =
    (ctx.commandName === 'aggregate' || ctx.commandName === 'getMore') &&
    code !== undefined &&
    ctx.writeConcernErrorCode === undefined &&
    ctx.changeStream &&
    (RETRIABLE.has(code) || NETWORK.has(code) || NEED_RETARGETTING.has(code) || code === 234 || code === 133);
  if (!transientOrRetryable && resumable) labels.push('ResumableChangeStreamError');
  else if (code !== undefined && NON_RESUMABLE_CHANGE_STREAM.has(code)) labels.push('NonResumableChangeStreamError');
  return labels;
}
