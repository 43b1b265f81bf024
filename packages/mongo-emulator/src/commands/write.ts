/**
 * insert, update and delete: ordered batches stop at the first error, unordered ones continue;
 * errors are reported per statement in `writeErrors` with `ok: 1`, as mongod does, except an
 * interruption (MaxTimeMSExpired...), which fails the whole command. A write error
 * inside a transaction aborts it; a WriteConflict is a command error so its label reaches
 * withTransaction. In a retryable write each statement's result is recorded, so a retry of the
 * same txnNumber returns it instead of writing twice.
 */
import { ObjectId } from 'bson';
import { CloseConnection, CommandError, ErrorCodes, isInterruption, LockWait, toCommandError } from '../errors.js';
import { matchingItems } from '../query/execute.js';
import { applyUpdate, buildUpsertDocument, isOperatorUpdate } from '../query/update.js';
import type { CollectionView, Item } from '../views.js';
import { idFirst, isPlainObject, type Doc } from '../values.js';
import type { CommandContext, CommandTable } from './context.js';
import { collectionName, letVariables, rejectCollation } from './arguments.js';
import { checkInsertable, checkUpdated } from '../document-limits.js';

/** Runs one statement, waiting out a transaction's lock (bounded by maxTimeMS) and retrying from scratch. */
export async function runStatement<T>(ctx: CommandContext, fn: () => T): Promise<T> {
  for (;;) {
    try {
      return fn();
    } catch (err) {
      if (err instanceof LockWait) {
        await ctx.wait(err.until);
        continue;
      }
      throw err;
    }
  }
}

/**
 * Statement `index` of a retryable write: returns the recorded result if it already ran (a
 * retry), else runs it and records the result. The onPrimaryTransactionalWrite fail point fires
 * here: with failBeforeCommitExceptionCode the statement is not applied, otherwise it is applied
 * and recorded; either way the connection then closes (closeConnection defaults to true).
 */
export async function retryableStatement<T>(ctx: CommandContext, index: number, exec: () => Promise<T>): Promise<T> {
  const record = ctx.retryable;
  if (!record) return exec();
  const done = record.result(index);
  if (done !== undefined) return done as T;
  const failPoint = ctx.engine.failPoints.armed ? ctx.engine.failPoints.fire('onPrimaryTransactionalWrite', () => true) : undefined;
  const close = failPoint !== undefined && failPoint.closeConnection !== false;
  if (failPoint?.failBeforeCommitExceptionCode !== undefined) {
    if (close) throw new CloseConnection();
    throw new CommandError(Number(failPoint.failBeforeCommitExceptionCode), "Failing write via 'onPrimaryTransactionalWrite' failpoint");
  }
  const result = await exec();
  record.record(index, result);
  if (close) throw new CloseConnection();
  return result;
}

/**
 * The statements of a write command. Their fields are checked up front: like mongod's command
 * parser, an unknown field fails the whole command (40415) before any statement runs. MongoDB
 * 7.0 has no update `sort` (added in 8.0), so it is unknown here too.
 */
function statements(ctx: CommandContext, field: string, allowed?: string[]): Doc[] {
  const list = ctx.body[field];
  if (!Array.isArray(list)) throw new CommandError('TypeMismatch', `BSON field '${ctx.name}.${field}' is missing but a required field`);
  for (const s of list) {
    if (!isPlainObject(s)) throw new CommandError('TypeMismatch', `BSON field '${ctx.name}.${field}' must contain objects`);
    for (const key of allowed ? Object.keys(s) : []) {
      if (!allowed?.includes(key)) throw new CommandError('IDLUnknownField', `BSON field '${ctx.name}.${field}.${key}' is an unknown field.`);
    }
    if (allowed) rejectCollation(s, ctx.name);
  }
  return list as Doc[];
}

const UPDATE_FIELDS = ['q', 'u', 'upsert', 'multi', 'arrayFilters', 'hint', 'collation', 'c', 'upsertSupplied'];
const DELETE_FIELDS = ['q', 'limit', 'hint', 'collation'];

/** Shared batch loop: per-statement errors, ordered/unordered, transaction abort on error, retry records. */
async function runBatch<R>(
  ctx: CommandContext,
  items: Doc[],
  exec: (stmt: Doc, index: number) => Promise<R>,
  apply: (result: R, index: number) => void,
): Promise<Doc[]> {
  const ordered = ctx.body.ordered !== false;
  const writeErrors: Doc[] = [];
  for (let i = 0; i < items.length; i++) {
    try {
      apply(await retryableStatement(ctx, i, () => exec(items[i], i)), i);
    } catch (err) {
      if (err instanceof CloseConnection) throw err;
      const error = toCommandError(err);
      if (error.code === ErrorCodes.WriteConflict || error.code === ErrorCodes.NoSuchTransaction) throw error;
      // mongod's write_ops_exec.cpp handleError: "if (ErrorCodes::isInterruption(ex.code())) {
      // throw; // These have always failed the whole batch." The command fails (ok: 0) and the
      // statements after it, ordered or not, never run; the ones before it stay applied.
      if (isInterruption(error.code)) throw error;
      writeErrors.push(error.toWriteError(i));
      if (ctx.txn) {
        ctx.engine.sessions.abort(ctx.txn);
        break;
      }
      if (ordered) break;
    }
  }
  return writeErrors;
}

function withErrors(reply: Doc, writeErrors: Doc[]): Doc {
  if (writeErrors.length > 0) reply.writeErrors = writeErrors;
  reply.ok = 1;
  return reply;
}

async function insert(ctx: CommandContext): Promise<Doc> {
  const view = ctx.view(collectionName(ctx));
  const docs = statements(ctx, 'documents');
  let n = 0;
  const writeErrors = await runBatch(
    ctx,
    docs,
    async (doc) => {
      const stored = idFirst('_id' in doc ? doc : { _id: new ObjectId(), ...doc });
      checkInsertable(stored);
      await runStatement(ctx, () => view.insert(stored));
      ctx.engine.opCounters.insert++;
      return 1;
    },
    (inserted) => {
      n += inserted;
    },
  );
  return withErrors({ n }, writeErrors);
}

function firstOnly(it: Generator<Item>): Item[] {
  const r = it.next();
  it.return(undefined);
  return r.done ? [] : [r.value];
}

interface UpdateResult {
  n: number;
  nModified: number;
  upserted?: unknown;
}

/** One update statement; shared with findAndModify's notion of matching. */
function updateStatement(ctx: CommandContext, view: CollectionView, stmt: Doc, commandLet: Doc | undefined): UpdateResult {
  const result: UpdateResult = { n: 0, nModified: 0 };
  const q = stmt.q;
  const u = stmt.u;
  if (!isPlainObject(q)) throw new CommandError('TypeMismatch', "BSON field 'update.updates.q' is missing but a required field");
  if (u === undefined) throw new CommandError('TypeMismatch', "BSON field 'update.updates.u' is missing but a required field");
  const multi = stmt.multi === true;
  if (multi && isPlainObject(u) && !isOperatorUpdate(u)) {
    throw new CommandError('FailedToParse', 'multi update is not supported for replacement-style update');
  }
  const arrayFilters = stmt.arrayFilters as Doc[] | undefined;
  const variables = (stmt.c as Doc | undefined) ?? commandLet;
  const now = ctx.engine.clock.now();
  const matches = matchingItems(view, q, [], { variables, hint: stmt.hint });
  const items = multi ? [...matches] : firstOnly(matches);
  if (items.length === 0) {
    if (stmt.upsert === true) {
      const doc = buildUpsertDocument(q, u, { query: q, arrayFilters, now, variables });
      checkInsertable(doc, true);
      view.insert(doc);
      result.n++;
      result.upserted = doc._id;
      ctx.engine.opCounters.update++;
    }
    return result;
  }
  view.reserve(items);
  // Compute every new version first: an invalid update changes nothing.
  const outcomes = items.map((item) => ({ item, outcome: applyUpdate(item.doc, u, { query: q, arrayFilters, inserting: false, now, variables }) }));
  for (const { item, outcome } of outcomes) {
    if (!outcome.modified) continue;
    checkUpdated(outcome.doc);
    ctx.engine.sharding?.checkShardKeyUpdate(ctx, view.ns, q, item.doc, outcome.doc, multi);
  }
  for (const { item, outcome } of outcomes) {
    result.n++;
    if (outcome.modified) {
      view.update(item, outcome.doc, outcome.kind, outcome.changed);
      result.nModified++;
    }
    ctx.engine.opCounters.update++;
  }
  return result;
}

async function update(ctx: CommandContext): Promise<Doc> {
  const view = ctx.view(collectionName(ctx));
  const total = { n: 0, nModified: 0, upserted: [] as Doc[] };
  const variables = letVariables(ctx);
  const writeErrors = await runBatch(
    ctx,
    statements(ctx, 'updates', UPDATE_FIELDS),
    (stmt, index) => {
      ctx.engine.sharding?.refuseStatement(ctx, index);
      return runStatement(ctx, () => updateStatement(ctx, view, stmt, variables));
    },
    (result, index) => {
      total.n += result.n;
      total.nModified += result.nModified;
      if (result.upserted !== undefined) total.upserted.push({ index, _id: result.upserted });
    },
  );
  const reply: Doc = { n: total.n, nModified: total.nModified };
  if (total.upserted.length > 0) reply.upserted = total.upserted;
  return withErrors(reply, writeErrors);
}

async function remove(ctx: CommandContext): Promise<Doc> {
  const view = ctx.view(collectionName(ctx));
  let n = 0;
  const variables = letVariables(ctx);
  const writeErrors = await runBatch(
    ctx,
    statements(ctx, 'deletes', DELETE_FIELDS),
    (stmt, index) => {
      ctx.engine.sharding?.refuseStatement(ctx, index);
      return runStatement(ctx, () => {
        if (!isPlainObject(stmt.q)) throw new CommandError('TypeMismatch', "BSON field 'delete.deletes.q' is missing but a required field");
        if (stmt.limit !== 0 && stmt.limit !== 1)
          throw new CommandError('FailedToParse', 'The limit field in delete objects must be 0 or 1. Got ' + String(stmt.limit));
        const matches = matchingItems(view, stmt.q, [], { variables, hint: stmt.hint });
        const items = stmt.limit === 1 ? firstOnly(matches) : [...matches];
        view.reserve(items);
        for (const item of items) {
          view.remove(item);
          ctx.engine.opCounters.delete++;
        }
        return items.length;
      });
    },
    (removed) => {
      n += removed;
    },
  );
  return withErrors({ n }, writeErrors);
}

const WRITE_FIELDS = ['ordered', 'bypassDocumentValidation', 'let'];

export const writeCommands: CommandTable = {
  insert: { run: insert, fields: ['documents', ...WRITE_FIELDS], inTransaction: true, retryable: true },
  update: { run: update, fields: ['updates', ...WRITE_FIELDS], inTransaction: true, retryable: true },
  delete: { run: remove, fields: ['deletes', ...WRITE_FIELDS], inTransaction: true, retryable: true },
};

export { firstOnly };
