/**
 * aggregate: a leading $match/$sort/$skip/$limit runs through the planner (indexes, BSON sort
 * order); later stages run in mingo, except $sort, which uses the BSON comparator so mixed-type
 * ordering matches mongod. $changeStream opens a change stream cursor. Stages mingo lacks, and
 * $out/$merge, are refused by name.
 */
import { MongoAggregator as Aggregator, withNow } from '../query/mingo-context.js';
import { CommandError, notImplemented } from '../errors.js';
import { matchingItems } from '../query/execute.js';
import { parseSort, sortComparator } from '../query/sort.js';
import { ChangeStreamSource } from '../change-stream.js';
import { cursorReply, DEFAULT_FIRST_BATCH, IteratorSource, openCursor } from '../cursors.js';
import { runMerge, runOut, WRITE_STAGES } from '../query/write-stages.js';
import { cloneValue, isPlainObject, type Doc } from '../values.js';
import type { CommandContext, CommandTable } from './context.js';
import { batchSizeOf, letVariables, rejectCollation } from './arguments.js';
import { assertKnownStage } from '../query/pipeline-stages.js';

const MINGO_STAGES = new Set([
  '$addFields',
  '$bucket',
  '$bucketAuto',
  '$count',
  '$densify',
  '$documents',
  '$facet',
  '$fill',
  '$graphLookup',
  '$group',
  '$limit',
  '$lookup',
  '$match',
  '$project',
  '$redact',
  '$replaceRoot',
  '$replaceWith',
  '$sample',
  '$set',
  '$setWindowFields',
  '$skip',
  '$sort',
  '$sortByCount',
  '$unionWith',
  '$unset',
  '$unwind',
]);

function stageName(stage: unknown): string {
  if (!isPlainObject(stage) || Object.keys(stage).length !== 1) {
    throw new CommandError('Location40323', 'A pipeline stage specification object must contain exactly one field.');
  }
  return Object.keys(stage)[0];
}

interface Prefix {
  filter?: Doc;
  sort?: Doc;
  skip: number;
  limit: number;
  rest: Doc[];
}

/** Splits off the leading $match/$sort/$skip/$limit the planner can run. */
export function leadingPrefix(pipeline: Doc[]): Prefix {
  const prefix: Prefix = { skip: 0, limit: 0, rest: [] };
  let i = 0;
  if (i < pipeline.length && '$match' in pipeline[i]) {
    const m = pipeline[i].$match;
    if (isPlainObject(m) && !('$expr' in m)) {
      prefix.filter = m;
      i++;
    }
  }
  if (i < pipeline.length && '$sort' in pipeline[i]) prefix.sort = pipeline[i++].$sort as Doc;
  if (i < pipeline.length && '$skip' in pipeline[i] && typeof pipeline[i].$skip === 'number') prefix.skip = pipeline[i++].$skip as number;
  if (i < pipeline.length && '$limit' in pipeline[i] && typeof pipeline[i].$limit === 'number') prefix.limit = pipeline[i++].$limit as number;
  prefix.rest = pipeline.slice(i);
  return prefix;
}

/**
 * The field name of a `{ $group: { _id: <constant>, <field>: { $sum: 1 } } }` stage (the shape the
 * drivers' countDocuments sends after its $match/$skip/$limit), else undefined. Such a pipeline is
 * answered by counting the planner's matches: no document is copied, where the general path copies
 * every match for the stages that follow (a progress count over 100,000 documents, polled a few
 * times a second, spent most of a soak's emulator CPU copying them).
 */
function countGroupField(stages: Doc[]): string | undefined {
  if (stages.length !== 1 || Object.keys(stages[0]).length !== 1 || !isPlainObject(stages[0].$group)) return undefined;
  const group = stages[0].$group;
  const keys = Object.keys(group);
  const id = group._id;
  if (keys.length !== 2 || !('_id' in group) || (typeof id !== 'number' && id !== null)) return undefined;
  const field = keys.find((k) => k !== '_id')!;
  const accumulator = group[field];
  if (!isPlainObject(accumulator) || Object.keys(accumulator).length !== 1 || accumulator.$sum !== 1) return undefined;
  return field;
}

function runStages(docs: Doc[], rawStages: Doc[], ctx: CommandContext, variables?: Doc): Doc[] {
  const stages = withNow(rawStages, ctx.engine.clock.now());
  const resolver = (name: string) => [...matchingItems(ctx.view(name), {}, [])].map((i) => cloneValue(i.doc));
  let current = docs;
  let segment: Doc[] = [];
  const flush = () => {
    if (segment.length === 0) return;
    current = new Aggregator(segment, { collectionResolver: resolver, ...(variables ? { variables } : {}) }).run(current) as Doc[];
    segment = [];
  };
  for (const stage of stages) {
    if ('$sort' in stage) {
      flush();
      const compare = sortComparator(parseSort(stage.$sort));
      current = [...current].sort(compare);
    } else segment.push(stage);
  }
  flush();
  return current;
}

function checkStages(pipeline: Doc[]): void {
  pipeline.forEach((stage, index) => {
    const name = stageName(stage);
    if (name === '$changeStream') {
      if (index !== 0) throw new CommandError('Location40573', '$changeStream is only valid as the first stage in a pipeline');
      return;
    }
    assertKnownStage(name);
    if (WRITE_STAGES.has(name)) {
      if (index !== pipeline.length - 1) throw new CommandError(40601, `${name} can only be the final stage in the pipeline`);
      return;
    }
    if (name === '$listLocalSessions') {
      if (index !== 0) throw new CommandError(40602, `${name} is only valid as the first stage in a pipeline`);
      return;
    }
    if (!MINGO_STAGES.has(name)) throw notImplemented(`aggregation stage '${name}'`);
    if (name === '$lookup' || name === '$facet' || name === '$unionWith') {
      const nested = JSON.stringify(stage);
      if (nested.includes('"$out"') || nested.includes('"$merge"')) throw notImplemented(`'$out'/'$merge' inside ${name}`);
    }
  });
}

async function aggregate(ctx: CommandContext): Promise<Doc> {
  const { body, engine } = ctx;
  const target = body.aggregate;
  const pipeline = body.pipeline;
  if (!Array.isArray(pipeline)) throw new CommandError('TypeMismatch', "BSON field 'aggregate.pipeline' is missing but a required field");
  if (body.explain !== undefined) throw notImplemented("option 'explain' of command 'aggregate'");
  if (!isPlainObject(body.cursor)) {
    throw new CommandError('FailedToParse', "The 'cursor' option is required, except for aggregate with the explain argument");
  }
  rejectCollation(body, 'aggregate');
  checkStages(pipeline as Doc[]);
  const batchSize = batchSizeOf(body.cursor as Doc, 'aggregate.cursor') ?? DEFAULT_FIRST_BATCH;
  const variables = letVariables(ctx);
  const stages = pipeline as Doc[];
  const isCollection = typeof target === 'string';
  if (!isCollection && target !== 1) throw new CommandError('FailedToParse', "Invalid aggregate namespace: 'aggregate' must be a collection name or 1");
  const ns = isCollection ? `${ctx.db}.${target}` : `${ctx.db}.$cmd.aggregate`;

  if (stages.length > 0 && '$changeStream' in stages[0]) {
    if (!engine.replicaSet) throw new CommandError('Location40573', 'The $changeStream stage is only supported on replica sets');
    if (ctx.txn) throw new CommandError('OperationNotSupportedInTransaction', 'Cannot run $changeStream in a multi-document transaction.');
    const stage = (stages[0].$changeStream ?? {}) as Doc;
    const cluster = stage.allChangesForCluster === true;
    if (cluster && ctx.db !== 'admin')
      throw new CommandError('InvalidOptions', '$changeStream may not be opened on the internal admin database unless allChangesForCluster is set');
    const scope = isCollection ? { db: ctx.db, coll: target as string } : cluster ? {} : { db: ctx.db };
    const source = new ChangeStreamSource(engine.changeLog, engine.catalog, scope, stage, stages.slice(1));
    const reply = await openCursor(engine.cursors, ns, source, batchSize, ctx.sessionKey);
    return reply;
  }

  engine.opCounters.command++;
  const last = stages[stages.length - 1];
  const write = last && WRITE_STAGES.has(stageName(last)) ? (last as Doc) : undefined;
  if (write && ctx.txn) throw new CommandError('OperationNotSupportedInTransaction', `${stageName(write)} cannot be used in a transaction`);
  if (write && (body.readConcern as Doc | undefined)?.level === 'linearizable') {
    throw new CommandError('InvalidOptions', `${stageName(write)} cannot be used with a 'linearizable' read concern level`);
  }
  const readStages = write ? stages.slice(0, -1) : stages;
  let docs: Doc[];
  if (isCollection) {
    const prefix = leadingPrefix(readStages);
    const items = matchingItems(ctx.view(target as string), prefix.filter, parseSort(prefix.sort), { variables, hint: body.hint });
    const countField = write ? undefined : countGroupField(prefix.rest);
    docs = [];
    let skipped = 0;
    let taken = 0;
    for (const { doc } of items) {
      if (skipped < prefix.skip) {
        skipped++;
        continue;
      }
      taken++;
      if (countField === undefined) docs.push(cloneValue(doc));
      if (prefix.limit > 0 && taken >= prefix.limit) break;
    }
    if (countField === undefined) docs = runStages(docs, prefix.rest, ctx, variables);
    // $group over no documents yields no group, as on mongod.
    else docs = taken === 0 ? [] : [{ _id: (prefix.rest[0].$group as Doc)._id, [countField]: taken }];
  } else if (readStages.length > 0 && '$listLocalSessions' in readStages[0]) {
    docs = runStages(engine.sessions.localSessions(), readStages.slice(1), ctx, variables);
  } else {
    if (readStages.length === 0 || !('$documents' in readStages[0]))
      throw notImplemented('aggregate: 1 without $documents, $listLocalSessions or $changeStream');
    docs = runStages([], readStages, ctx, variables);
  }
  if (write) {
    if ('$out' in write) runOut(engine, ctx.db, write.$out, docs);
    else runMerge(engine, ctx.db, write.$merge, docs, engine.clock.now());
    return cursorReply(0, ns, [], true);
  }
  return openCursor(engine.cursors, ns, new IteratorSource(docs[Symbol.iterator]()), batchSize, ctx.sessionKey);
}

export const aggregateCommands: CommandTable = {
  aggregate: {
    run: aggregate,
    fields: ['pipeline', 'cursor', 'explain', 'allowDiskUse', 'collation', 'hint', 'let', 'bypassDocumentValidation', 'fromMongos', 'needsMerge'],
    inTransaction: true,
  },
};
