/** endSessions, refreshSessions, killAllSessions, commitTransaction and abortTransaction. */
import { CommandError } from '../errors.js';
import type { Doc } from '../values.js';
import type { CommandContext, CommandTable } from './context.js';

function endSessions(ctx: CommandContext): Doc {
  const lsids = ctx.body[ctx.name];
  if (!Array.isArray(lsids)) throw new CommandError('TypeMismatch', `BSON field '${ctx.name}' is the wrong type, expected type 'array'`);
  ctx.engine.sessions.end(lsids);
  return { ok: 1 };
}

function commitTransaction(ctx: CommandContext): Doc {
  if (!ctx.txn) throw new CommandError('NoSuchTransaction', 'No transaction to commit', { labels: ['TransientTransactionError'] });
  ctx.engine.sessions.commit(ctx.txn);
  return { ok: 1 };
}

function abortTransaction(ctx: CommandContext): Doc {
  if (!ctx.txn) throw new CommandError('NoSuchTransaction', 'No transaction to abort', { labels: ['TransientTransactionError'] });
  ctx.engine.sessions.abort(ctx.txn);
  return { ok: 1 };
}

export const sessionCommands: CommandTable = {
  endSessions: { run: endSessions, fields: [] },
  refreshSessions: { run: () => ({ ok: 1 }), fields: [] },
  killAllSessions: {
    run: (ctx) => {
      // Test runners use it to end whatever transactions a previous test left open.
      ctx.engine.sessions.abortAll();
      return { ok: 1 };
    },
    fields: [],
  },
  commitTransaction: { run: commitTransaction, fields: ['recoveryToken'], inTransaction: true, adminOnly: true },
  abortTransaction: { run: abortTransaction, fields: ['recoveryToken'], inTransaction: true, adminOnly: true },
};
