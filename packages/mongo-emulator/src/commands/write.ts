/**
 * insert, update and delete: ordered batches stop at the first error, unordered ones continue;
 * errors are reported per statement in `writeErrors` with `ok: 1`, as mongod does. A write error
 * inside a transaction aborts it; a WriteConflict is a command error so its label reaches
 * withTransaction.
 */
import { ObjectId } from 'bson';
import { CommandError, ErrorCodes, toCommandError } from '../errors.js';
import { matchingItems } from '../query/execute.js';
import { parseSort } from '../query/sort.js';
import { applyUpdate, buildUpsertDocument, isOperatorUpdate } from '../query/update.js';
import { LockWait, type CollectionView, type Item } from '../views.js';
import { idFirst, isPlainObject, type Doc } from '../values.js';
import type { CommandContext, CommandTable } from './context.js';
import { collectionName, rejectCollation } from './arguments.js';

/** Runs one statement, waiting out a transaction's lock and retrying from scratch. */
export async function runStatement<T>(fn: () => T): Promise<T> {
  for (;;) {
    try {
      return fn();
    } catch (err) {
      if (err instanceof LockWait) {
        await err.until;
        continue;
      }
      throw err;
    }
  }
}

function statements(ctx: CommandContext, field: string): Doc[] {
  const list = ctx.body[field];
  if (!Array.isArray(list)) throw new CommandError('TypeMismatch', `BSON field '${ctx.name}.${field}' is missing but a required field`);
  for (const s of list) if (!isPlainObject(s)) throw new CommandError('TypeMismatch', `BSON field '${ctx.name}.${field}' must contain objects`);
  return list as Doc[];
}

/** Shared batch loop: per-statement errors, ordered/unordered, transaction abort on error. */
async function runBatch(ctx: CommandContext, items: Doc[], exec: (stmt: Doc, index: number) => Promise<void>): Promise<Doc[]> {
  const ordered = ctx.body.ordered !== false;
  const writeErrors: Doc[] = [];
  for (let i = 0; i < items.length; i++) {
    try {
      await exec(items[i], i);
    } catch (err) {
      const error = toCommandError(err);
      if (error.code === ErrorCodes.WriteConflict || error.code === ErrorCodes.NoSuchTransaction) throw error;
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
  const writeErrors = await runBatch(ctx, docs, async (doc) => {
    const stored = idFirst('_id' in doc ? doc : { _id: new ObjectId(), ...doc });
    if (Array.isArray(stored._id)) throw new CommandError('BadValue', "can't use an array for _id");
    await runStatement(() => view.insert(stored));
    ctx.engine.opCounters.insert++;
    n++;
  });
  return withErrors({ n }, writeErrors);
}

function firstOnly(it: Generator<Item>): Item[] {
  const r = it.next();
  it.return(undefined);
  return r.done ? [] : [r.value];
}

/** One update statement; shared with findAndModify's notion of matching. */
function updateStatement(ctx: CommandContext, view: CollectionView, stmt: Doc, index: number, result: { n: number; nModified: number; upserted: Doc[] }): void {
  const q = stmt.q;
  const u = stmt.u;
  if (!isPlainObject(q)) throw new CommandError('TypeMismatch', "BSON field 'update.updates.q' is missing but a required field");
  if (u === undefined) throw new CommandError('TypeMismatch', "BSON field 'update.updates.u' is missing but a required field");
  for (const key of Object.keys(stmt)) {
    if (!['q', 'u', 'upsert', 'multi', 'arrayFilters', 'hint', 'collation', 'c', 'sort', 'upsertSupplied'].includes(key)) {
      throw new CommandError('IDLUnknownField', `BSON field 'update.updates.${key}' is an unknown field.`);
    }
  }
  rejectCollation(stmt, 'update');
  const multi = stmt.multi === true;
  if (multi && isPlainObject(u) && !isOperatorUpdate(u)) {
    throw new CommandError('FailedToParse', 'multi update is not supported for replacement-style update');
  }
  if (multi && stmt.sort !== undefined) throw new CommandError('FailedToParse', 'Cannot specify sort with multi=true');
  const arrayFilters = stmt.arrayFilters as Doc[] | undefined;
  const variables = (stmt.c ?? ctx.body.let) as Doc | undefined;
  const now = ctx.engine.clock.now();
  const matches = matchingItems(view, q, parseSort(stmt.sort), { variables, hint: stmt.hint });
  const items = multi ? [...matches] : firstOnly(matches);
  if (items.length === 0) {
    if (stmt.upsert === true) {
      const doc = buildUpsertDocument(q, u, { query: q, arrayFilters, now, variables });
      view.insert(doc);
      result.n++;
      result.upserted.push({ index, _id: doc._id });
      ctx.engine.opCounters.update++;
    }
    return;
  }
  view.reserve(items);
  // Compute every new version first: an invalid update changes nothing.
  const outcomes = items.map((item) => ({ item, outcome: applyUpdate(item.doc, u, { query: q, arrayFilters, inserting: false, now, variables }) }));
  for (const { item, outcome } of outcomes) {
    result.n++;
    if (outcome.modified) {
      view.update(item, outcome.doc, outcome.kind);
      result.nModified++;
    }
    ctx.engine.opCounters.update++;
  }
}

async function update(ctx: CommandContext): Promise<Doc> {
  const view = ctx.view(collectionName(ctx));
  const result = { n: 0, nModified: 0, upserted: [] as Doc[] };
  const writeErrors = await runBatch(ctx, statements(ctx, 'updates'), (stmt, i) => runStatement(() => updateStatement(ctx, view, stmt, i, result)));
  const reply: Doc = { n: result.n, nModified: result.nModified };
  if (result.upserted.length > 0) reply.upserted = result.upserted;
  return withErrors(reply, writeErrors);
}

async function remove(ctx: CommandContext): Promise<Doc> {
  const view = ctx.view(collectionName(ctx));
  let n = 0;
  const writeErrors = await runBatch(ctx, statements(ctx, 'deletes'), (stmt) =>
    runStatement(() => {
      if (!isPlainObject(stmt.q)) throw new CommandError('TypeMismatch', "BSON field 'delete.deletes.q' is missing but a required field");
      if (stmt.limit !== 0 && stmt.limit !== 1) throw new CommandError('FailedToParse', 'The limit field in delete objects must be 0 or 1. Got ' + String(stmt.limit));
      for (const key of Object.keys(stmt)) {
        if (!['q', 'limit', 'hint', 'collation'].includes(key)) throw new CommandError('IDLUnknownField', `BSON field 'delete.deletes.${key}' is an unknown field.`);
      }
      rejectCollation(stmt, 'delete');
      const matches = matchingItems(view, stmt.q, [], { variables: ctx.body.let as Doc | undefined, hint: stmt.hint });
      const items = stmt.limit === 1 ? firstOnly(matches) : [...matches];
      view.reserve(items);
      for (const item of items) {
        view.remove(item);
        n++;
        ctx.engine.opCounters.delete++;
      }
    }),
  );
  return withErrors({ n }, writeErrors);
}

const WRITE_FIELDS = ['ordered', 'bypassDocumentValidation', 'let'];

export const writeCommands: CommandTable = {
  insert: { run: insert, fields: ['documents', ...WRITE_FIELDS], inTransaction: true },
  update: { run: update, fields: ['updates', ...WRITE_FIELDS], inTransaction: true },
  delete: { run: remove, fields: ['deletes', ...WRITE_FIELDS], inTransaction: true },
};

export { firstOnly };
