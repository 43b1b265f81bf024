/** findAndModify: one document, matched in sort order, updated/replaced/upserted or removed. */
import { CloseConnection, CommandError, ErrorCodes, toCommandError } from '../errors.js';
import { matchingItems } from '../query/execute.js';
import { compileProjection } from '../query/projection.js';
import { parseSort } from '../query/sort.js';
import { applyUpdate, buildUpsertDocument } from '../query/update.js';
import type { Doc } from '../values.js';
import type { CommandContext, CommandTable } from './context.js';
import { collectionName, optionalDoc, letVariables, rejectCollation } from './arguments.js';
import { firstOnly, retryableStatement, runStatement } from './write.js';
import { checkInsertable, checkUpdated } from '../document-limits.js';

function validate(body: Doc): void {
  const remove = body.remove === true;
  const hasUpdate = body.update !== undefined;
  if (remove && hasUpdate) throw new CommandError('FailedToParse', 'Cannot specify both an update and remove=true');
  if (!remove && !hasUpdate) throw new CommandError('FailedToParse', 'Either an update or remove=true must be specified');
  if (remove && body.upsert === true) throw new CommandError('FailedToParse', 'Cannot specify both upsert=true and remove=true');
  if (remove && body.new === true) {
    throw new CommandError('FailedToParse', "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document");
  }
}

function execute(ctx: CommandContext): Doc {
  const { body, engine } = ctx;
  const view = ctx.view(collectionName(ctx));
  validate(body);
  rejectCollation(body, 'findAndModify');
  const query = optionalDoc(body, 'findAndModify', 'query') ?? {};
  const sort = parseSort(optionalDoc(body, 'findAndModify', 'sort'));
  const project = compileProjection(optionalDoc(body, 'findAndModify', 'fields'));
  const variables = letVariables(ctx);
  const arrayFilters = body.arrayFilters as Doc[] | undefined;
  const now = engine.clock.now();
  const [item] = firstOnly(matchingItems(view, query, sort, { variables, hint: body.hint }));
  if (body.remove === true) {
    if (!item) return { lastErrorObject: { n: 0 }, value: null, ok: 1 };
    const removed = item.doc;
    view.remove(item);
    engine.opCounters.delete++;
    return { lastErrorObject: { n: 1 }, value: project(removed), ok: 1 };
  }
  if (!item) {
    if (body.upsert !== true) return { lastErrorObject: { n: 0, updatedExisting: false }, value: null, ok: 1 };
    const doc = buildUpsertDocument(query, body.update, { query, arrayFilters, now, variables });
    checkInsertable(doc, true);
    view.insert(doc);
    engine.opCounters.update++;
    return {
      lastErrorObject: { n: 1, updatedExisting: false, upserted: doc._id },
      value: body.new === true ? project(doc) : null,
      ok: 1,
    };
  }
  view.reserve([item]);
  const before = item.doc; // the item may be the stored record itself, which update() changes
  const outcome = applyUpdate(before, body.update, { query, arrayFilters, inserting: false, now, variables });
  if (outcome.modified) {
    checkUpdated(outcome.doc);
    engine.sharding?.checkShardKeyUpdate(ctx, view.ns, query, before, outcome.doc, false);
    view.update(item, outcome.doc, outcome.kind, outcome.changed);
  }
  engine.opCounters.update++;
  return {
    lastErrorObject: { n: 1, updatedExisting: true },
    value: project(body.new === true ? outcome.doc : before),
    ok: 1,
  };
}

async function findAndModify(ctx: CommandContext): Promise<Doc> {
  try {
    return await retryableStatement(ctx, 0, () => runStatement(ctx, () => execute(ctx)));
  } catch (err) {
    if (err instanceof CloseConnection) throw err;
    const error = toCommandError(err);
    if (ctx.txn && error.code !== ErrorCodes.WriteConflict) ctx.engine.sessions.abort(ctx.txn);
    if (error.code === ErrorCodes.DuplicateKey) {
      throw new CommandError('DuplicateKey', `Plan executor error during findAndModify :: caused by :: ${error.message}`, { extra: error.extra });
    }
    throw error;
  }
}

export const findAndModifyCommands: CommandTable = {
  findAndModify: {
    run: findAndModify,
    fields: ['query', 'sort', 'remove', 'update', 'new', 'fields', 'upsert', 'bypassDocumentValidation', 'collation', 'arrayFilters', 'hint', 'let'],
    inTransaction: true,
    retryable: true,
  },
};
