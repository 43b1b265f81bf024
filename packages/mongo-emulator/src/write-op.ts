/** A committed document write, as recorded for change streams and version bookkeeping. */
import type { Long } from 'bson';
import type { Doc } from './values.js';

export interface WriteOp {
  kind: 'insert' | 'update' | 'replace' | 'delete';
  db: string;
  coll: string;
  before?: Doc;
  after?: Doc;
  /** The multi-document transaction that wrote it (its change event carries lsid and txnNumber). */
  txn?: TransactionId;
}

/** A transaction's session and number, as its change events report them. */
export interface TransactionId {
  lsid: Doc;
  txnNumber: Long;
}

export interface WriteRecorder {
  record(op: WriteOp): void;
}
