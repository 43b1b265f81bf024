/** What every command handler receives, and how handlers declare the fields they accept. */
import type { Engine } from '../engine.js';
import type { Transaction } from '../transactions.js';
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
  view(coll: string): CollectionView;
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
}

export type CommandTable = Record<string, CommandSpec>;
