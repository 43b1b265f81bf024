/** What every command handler receives, and how handlers declare the fields they accept. */
import type { Engine } from '../engine.js';
import type { RetryableWrite, Transaction } from '../transactions.js';
import type { CollectionView } from '../views.js';
import type { Doc } from '../values.js';

export interface CommandContext {
  engine: Engine;
  db: string;
  body: Doc;
  name: string;
  txn?: Transaction;
  sessionKey?: string;
  connectionId: number;
  /** Set for a retryable write (txnNumber outside a transaction): statements already run are not run again. */
  retryable?: RetryableWrite;
  view(coll: string): CollectionView;
  /**
   * Waits for `until` (a transaction's lock to be released), failing with MaxTimeMSExpired (50)
   * once the command's maxTimeMS has passed, as mongod interrupts a blocked operation.
   */
  wait: (until: Promise<void>) => Promise<void>;
}

export interface CommandSpec {
  run(ctx: CommandContext): Promise<Doc> | Doc;
  /** Fields accepted besides the generic ones (an unknown field is error 40415, like mongod). */
  fields: string[];
  /** Fields mongod accepts that the emulator refuses loudly (NotImplemented). */
  unsupported?: string[];
  /** Allowed inside a multi-document transaction. */
  inTransaction?: boolean;
  /** Must be sent to the admin database. */
  adminOnly?: boolean;
  /** A write that may run as a retryable write (txnNumber without autocommit). */
  retryable?: boolean;
}

export type CommandTable = Record<string, CommandSpec>;
