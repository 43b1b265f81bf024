/**
 * explain: the plan the emulator uses, in mongod's shape (`queryPlanner.winningPlan` as nested
 * stages: `COLLSCAN`, or `FETCH` over `IXSCAN` with `indexName`, or over an `OR` of them; the
 * planner's own name is kept as `emulatorPlan`), for find, findAndModify (the document it would
 * take: its query and sort, limit 1; nothing is modified), aggregate (its leading `$match`/`$sort`),
 * count and distinct. Tests use it to prove a query is index-backed, the same way on the emulator
 * and on mongod. For find and findAndModify, from `executionStats` on, also how many index keys the
 * plan walked (`totalKeysExamined`) and documents it fetched (`totalDocsExamined`: candidates the
 * plan yielded before the filter tested them, as mongod's FETCH stage counts), and how many it
 * returned. Execution stats of the other commands are refused (NotImplemented).
 */
import { CommandError, notImplemented } from '../errors.js';
import { matchingItems } from '../query/execute.js';
import { parseSort } from '../query/sort.js';
import { isPlainObject, type Doc } from '../values.js';
import { leadingPrefix } from './aggregate.js';
import { nonNegative, optionalDoc, optionalNumber, rejectCollation } from './arguments.js';
import type { CommandContext, CommandTable } from './context.js';

const VERBOSITIES = ['queryPlanner', 'executionStats', 'allPlansExecution'];
const FIND_FIELDS = new Set([
  'find',
  'filter',
  'sort',
  'projection',
  'skip',
  'limit',
  'batchSize',
  'singleBatch',
  'hint',
  'let',
  'collation',
  '$db',
  'lsid',
  'readConcern',
  'maxTimeMS',
  'comment',
]);

/** The planner's plan name as mongod's stage tree. */
function stages(plan: string): Doc {
  if (plan === 'COLLSCAN') return { stage: 'COLLSCAN', direction: 'forward', emulatorPlan: plan };
  if (plan === 'EOF') return { stage: 'EOF', emulatorPlan: plan };
  const ixscan = (name: string): Doc => ({ stage: 'IXSCAN', indexName: name.replace(/ \(hinted\)$/, '') });
  const or = /^OR\((.*)\)$/.exec(plan);
  if (or) return { stage: 'FETCH', inputStage: { stage: 'OR', inputStages: or[1].split(',').map(ixscan) }, emulatorPlan: plan };
  return { stage: 'FETCH', inputStage: ixscan(plan), emulatorPlan: plan };
}

/** The filter, sort and hint a command other than find would plan with. */
function planned(command: string, inner: Doc): { filter: Doc; sort: Doc | undefined; hint: unknown } {
  switch (command) {
    case 'count':
      return { filter: optionalDoc(inner, 'count', 'query') ?? {}, sort: undefined, hint: inner.hint };
    case 'distinct':
      return { filter: optionalDoc(inner, 'distinct', 'query') ?? {}, sort: undefined, hint: inner.hint };
    case 'aggregate': {
      if (!Array.isArray(inner.pipeline)) throw new CommandError('TypeMismatch', "BSON field 'aggregate.pipeline' is missing but a required field");
      const prefix = leadingPrefix(inner.pipeline as Doc[]);
      return { filter: prefix.filter ?? {}, sort: prefix.sort, hint: inner.hint };
    }
    default:
      throw notImplemented(`explain of command '${command}'`);
  }
}

/** findAndModify as the find of the one document it would take (explain never modifies). */
function asFind(inner: Doc): Doc {
  const find: Doc = { find: inner.findAndModify, filter: optionalDoc(inner, 'findAndModify', 'query') ?? {}, limit: 1 };
  for (const field of ['sort', 'hint', 'let', 'collation']) if (inner[field] !== undefined) find[field] = inner[field];
  return find;
}

function explain(ctx: CommandContext): Doc {
  const asked = ctx.body.explain;
  if (!isPlainObject(asked)) throw new CommandError('TypeMismatch', "BSON field 'explain.explain' is the wrong type, expected type 'object'");
  const inner = Object.keys(asked)[0] === 'findAndModify' ? asFind(asked) : asked;
  const command = Object.keys(inner)[0];
  const coll = inner[command];
  if (typeof coll !== 'string' || coll === '') throw new CommandError('InvalidNamespace', 'collection name has invalid type');
  const verbosity = ctx.body.verbosity ?? 'allPlansExecution';
  if (typeof verbosity !== 'string' || !VERBOSITIES.includes(verbosity))
    throw new CommandError('BadValue', `verbosity string must be one of {${VERBOSITIES.join(', ')}}`);
  const view = ctx.view(coll);
  if (command !== 'find') {
    if (verbosity !== 'queryPlanner') throw notImplemented(`explain '${verbosity}' of command '${command}'`);
    const { filter, sort, hint } = planned(command, inner);
    const plan = view.candidates(filter, parseSort(sort), hint).plan;
    return { queryPlanner: { namespace: `${ctx.db}.${coll}`, parsedQuery: filter, winningPlan: stages(plan), rejectedPlans: [] }, ok: 1 };
  }
  for (const field of Object.keys(inner)) if (!FIND_FIELDS.has(field)) throw notImplemented(`option '${field}' of an explained 'find'`);
  rejectCollation(inner, 'find');
  const filter = optionalDoc(inner, 'find', 'filter') ?? {};
  const sort = parseSort(optionalDoc(inner, 'find', 'sort'));
  const skip = nonNegative(inner, 'find', 'skip') ?? 0;
  const limit = Math.abs(optionalNumber(inner, 'find', 'limit') ?? 0);
  const reply: Doc = {
    queryPlanner: {
      namespace: `${ctx.db}.${coll}`,
      parsedQuery: filter,
      winningPlan: stages(view.candidates(filter, sort, inner.hint).plan),
      rejectedPlans: [],
    },
    ok: 1,
  };
  if (verbosity === 'queryPlanner') return reply;
  let docsExamined = 0;
  let matched = 0;
  const keysWalked = () => [...(view.collection()?.indexes.values() ?? [])].reduce((n, index) => n + index.keysExamined, 0);
  const keysBefore = keysWalked();
  const items = matchingItems(view, filter, sort, { variables: optionalDoc(inner, 'find', 'let'), hint: inner.hint, onCandidate: () => docsExamined++ });
  for (const _ of items) {
    if (++matched === skip + limit && limit > 0) break;
  }
  reply.executionStats = {
    executionSuccess: true,
    nReturned: Math.max(0, matched - skip),
    totalKeysExamined: keysWalked() - keysBefore,
    totalDocsExamined: docsExamined,
  };
  return reply;
}

export const explainCommands: CommandTable = {
  explain: { run: explain, fields: ['verbosity'] },
};
