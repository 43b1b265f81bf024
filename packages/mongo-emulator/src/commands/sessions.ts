/** endSessions, refreshSessions, killSessions, killAllSessions, commitTransaction and abortTransaction. */
import { CommandError } from '../errors.js';
import type { Doc } from '../values.js';
import type { CommandContext, CommandTable } from './context.js';

/** The command's list of session ids (`{ id: UUID }` each), as endSessions and killSessions take it. */
function sessionIds(ctx: CommandContext): unknown[] {
  const lsids = ctx.body[ctx.name];
  if (!Array.isArray(lsids)) throw new CommandError('TypeMismatch', `BSON field '${ctx.name}' is the wrong type, expected type 'array'`);
  return lsids;
}

function endSessions(ctx: CommandContext): Doc {
  ctx.engine.sessions.end(sessionIds(ctx));
  return { ok: 1 };
}

function killSessions(ctx: CommandContext): Doc {
  ctx.engine.sessions.kill(sessionIds(ctx));
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
  killSessions: { run: killSessions, fields: [] },
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
