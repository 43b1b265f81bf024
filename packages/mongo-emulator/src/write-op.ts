/** A committed document write, as recorded for change streams and version bookkeeping. */
import type { Doc } from './values.js';

export interface WriteOp {
  kind: 'insert' | 'update' | 'replace' | 'delete';
  db: string;
  coll: string;
  before?: Doc;
  after?: Doc;
}

export interface WriteRecorder {
  record(op: WriteOp): void;
}
