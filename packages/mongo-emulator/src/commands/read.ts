/** find, getMore, killCursors, count and distinct. */
import { Long } from 'bson';
import { CommandError, notImplemented } from '../errors.js';
import { compareBson, valueKey } from '../bson-order.js';
import { matchingItems } from '../query/execute.js';
import { compileProjection } from '../query/projection.js';
import { parseSort } from '../query/sort.js';
import { cursorReply, DEFAULT_FIRST_BATCH, IteratorSource, openCursor } from '../cursors.js';
import { pathValues, type Doc } from '../values.js';
import type { CommandContext, CommandTable } from './context.js';
import { batchSizeOf, collectionName, nonNegative, optionalDoc, optionalNumber, letVariables, rejectCollation } from './arguments.js';

function* skipLimitProject(items: Iterable<{ doc: Doc }>, skip: number, project: (d: Doc) => Doc): Generator<Doc> {
  let skipped = 0;
  for (const { doc } of items) {
    if (skipped < skip) {
      skipped++;
      continue;
    }
    yield project(doc);
  }
}

async function find(ctx: CommandContext): Promise<Doc> {
  const { body } = ctx;
  const coll = collectionName(ctx);
  for (const flag of ['tailable', 'awaitData', 'returnKey', 'showRecordId', 'oplogReplay']) {
    if (body[flag] === true) throw notImplemented(`option '${flag}' of command 'find'`);
  }
  if (body.min !== undefined || body.max !== undefined) throw notImplemented("option 'min'/'max' of command 'find'");
  rejectCollation(body, 'find');
  const filter = optionalDoc(body, 'find', 'filter');
  const sort = parseSort(optionalDoc(body, 'find', 'sort'));
  const project = compileProjection(optionalDoc(body, 'find', 'projection'));
  const skip = nonNegative(body, 'find', 'skip') ?? 0;
  let limit = optionalNumber(body, 'find', 'limit') ?? 0;
  let singleBatch = body.singleBatch === true;
  if (limit < 0) {
    limit = -limit;
    singleBatch = true;
  }
  const batchSize = batchSizeOf(body, 'find') ?? DEFAULT_FIRST_BATCH;
  const variables = letVariables(ctx);
  ctx.engine.opCounters.query++;
  const docs = skipLimitProject(matchingItems(ctx.view(coll), filter, sort, { variables, hint: body.hint }), skip, project);
  const source = new IteratorSource(docs, limit);
  const ns = `${ctx.db}.${coll}`;
  if (singleBatch) {
    const { docs: batch } = source.takeBatch(limit > 0 ? Math.min(limit, batchSize || limit) : batchSize);
    return cursorReply(0, ns, batch, true);
  }
  return openCursor(ctx.engine.cursors, ns, source, batchSize, ctx.sessionKey);
}

async function getMore(ctx: CommandContext): Promise<Doc> {
  const { body, engine } = ctx;
  const raw = body.getMore;
  const id = raw instanceof Long ? raw.toNumber() : Number(raw);
  if (typeof body.collection !== 'string') throw new CommandError('TypeMismatch', "BSON field 'getMore.collection' is missing but a required field");
  const ns = `${ctx.db}.${body.collection}`;
  const cursor = engine.cursors.get(id, ns);
  const failure = engine.failPoints.armed ? engine.failPoints.fire('failGetMoreAfterCursorCheckout', () => true) : undefined;
  if (failure?.errorCode !== undefined) throw new CommandError(Number(failure.errorCode), "Failing getMore via 'failGetMoreAfterCursorCheckout' failpoint");
  engine.opCounters.getmore++;
  const batchSize = batchSizeOf(body, 'getMore') ?? 0;
  const maxTimeMS = optionalNumber(body, 'getMore', 'maxTimeMS');
  const { docs, exhausted, extra } = await cursor.source.nextBatch(batchSize, maxTimeMS);
  if (exhausted) engine.cursors.kill(id);
  return cursorReply(exhausted ? 0 : id, cursor.ns, docs, false, extra);
}

function killCursors(ctx: CommandContext): Doc {
  const ids = ctx.body.cursors;
  if (!Array.isArray(ids)) throw new CommandError('TypeMismatch', "BSON field 'killCursors.cursors' is missing but a required field");
  const killed: Long[] = [];
  const notFound: Long[] = [];
  for (const raw of ids) {
    const id = raw instanceof Long ? raw.toNumber() : Number(raw);
    (ctx.engine.cursors.kill(id) ? killed : notFound).push(Long.fromNumber(id));
  }
  return { cursorsKilled: killed, cursorsNotFound: notFound, cursorsAlive: [], cursorsUnknown: [], ok: 1 };
}

function count(ctx: CommandContext): Doc {
  const { body } = ctx;
  const coll = collectionName(ctx);
  rejectCollation(body, 'count');
  const query = optionalDoc(body, 'count', 'query');
  const skip = nonNegative(body, 'count', 'skip') ?? 0;
  const limit = Math.abs(optionalNumber(body, 'count', 'limit') ?? 0);
  let n = 0;
  for (const _ of matchingItems(ctx.view(coll), query, [], { hint: body.hint })) n++;
  n = Math.max(0, n - skip);
  if (limit > 0) n = Math.min(n, limit);
  return { n, ok: 1 };
}

function distinct(ctx: CommandContext): Doc {
  const { body } = ctx;
  const coll = collectionName(ctx);
  rejectCollation(body, 'distinct');
  if (typeof body.key !== 'string') throw new CommandError('TypeMismatch', "BSON field 'distinct.key' is missing but a required field");
  const key = body.key;
  const query = optionalDoc(body, 'distinct', 'query');
  const seen = new Map<string, unknown>();
  for (const { doc } of matchingItems(ctx.view(coll), query, [], { hint: body.hint })) {
    for (const v of pathValues(doc, key)) {
      if (v === undefined) continue;
      const k = valueKey(v);
      if (!seen.has(k)) seen.set(k, v);
    }
  }
  const values = [...seen.values()].sort(compareBson);
  return { values, ok: 1 };
}

export const readCommands: CommandTable = {
  find: {
    run: find,
    fields: [
      'filter',
      'sort',
      'projection',
      'skip',
      'limit',
      'batchSize',
      'singleBatch',
      'hint',
      'let',
      'noCursorTimeout',
      'allowPartialResults',
      'allowDiskUse',
      'tailable',
      'awaitData',
      'returnKey',
      'showRecordId',
      'oplogReplay',
      'min',
      'max',
      'collation',
      'readOnce',
      'maxScan',
    ],
    inTransaction: true,
  },
  getMore: { run: getMore, fields: ['collection', 'batchSize', 'term', 'lastKnownCommittedOpTime'], inTransaction: true },
  killCursors: { run: killCursors, fields: ['cursors'], inTransaction: true },
  count: { run: count, fields: ['query', 'skip', 'limit', 'hint', 'collation', 'fields'] },
  distinct: { run: distinct, fields: ['key', 'query', 'hint', 'collation'], inTransaction: true },
};
