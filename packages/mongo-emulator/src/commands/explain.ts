/**
 * explain of `find`: the plan the emulator uses and, from `executionStats` on, how many documents
 * the query fetched (`totalDocsExamined`: candidates the plan yielded before the filter tested
 * them, as mongod's FETCH stage counts) and returned. Index keys examined are not counted, and other
 * explained commands are refused (NotImplemented).
 */
import { CommandError, notImplemented } from '../errors.js';
import { matchingItems } from '../query/execute.js';
import { parseSort } from '../query/sort.js';
import { isPlainObject, type Doc } from '../values.js';
import { nonNegative, optionalDoc, optionalNumber, rejectCollation } from './arguments.js';
import type { CommandContext, CommandTable } from './context.js';

const VERBOSITIES = ['queryPlanner', 'executionStats', 'allPlansExecution'];
const FIND_FIELDS = new Set(['find', 'filter', 'sort', 'projection', 'skip', 'limit', 'batchSize', 'singleBatch', 'hint', 'let', 'collation', '$db', 'lsid', 'readConcern', 'maxTimeMS', 'comment']);

function explain(ctx: CommandContext): Doc {
  const inner = ctx.body.explain;
  if (!isPlainObject(inner)) throw new CommandError('TypeMismatch', "BSON field 'explain.explain' is the wrong type, expected type 'object'");
  const command = Object.keys(inner)[0];
  if (command !== 'find') throw notImplemented(`explain of command '${command}'`);
  for (const field of Object.keys(inner)) if (!FIND_FIELDS.has(field)) throw notImplemented(`option '${field}' of an explained 'find'`);
  const coll = inner.find;
  if (typeof coll !== 'string' || coll === '') throw new CommandError('InvalidNamespace', 'collection name has invalid type');
  const verbosity = ctx.body.verbosity ?? 'allPlansExecution';
  if (typeof verbosity !== 'string' || !VERBOSITIES.includes(verbosity)) throw new CommandError('BadValue', `verbosity string must be one of {${VERBOSITIES.join(', ')}}`);
  rejectCollation(inner, 'find');
  const filter = optionalDoc(inner, 'find', 'filter') ?? {};
  const sort = parseSort(optionalDoc(inner, 'find', 'sort'));
  const skip = nonNegative(inner, 'find', 'skip') ?? 0;
  const limit = Math.abs(optionalNumber(inner, 'find', 'limit') ?? 0);
  const view = ctx.view(coll);
  const reply: Doc = {
    queryPlanner: { namespace: `${ctx.db}.${coll}`, parsedQuery: filter, winningPlan: { emulatorPlan: view.candidates(filter, sort, inner.hint).plan } },
    ok: 1,
  };
  if (verbosity === 'queryPlanner') return reply;
  let docsExamined = 0;
  let matched = 0;
  const items = matchingItems(view, filter, sort, { variables: optionalDoc(inner, 'find', 'let'), hint: inner.hint, onCandidate: () => docsExamined++ });
  for (const _ of items) {
    if (++matched === skip + limit && limit > 0) break;
  }
  reply.executionStats = { executionSuccess: true, nReturned: Math.max(0, matched - skip), totalDocsExamined: docsExamined };
  return reply;
}

export const explainCommands: CommandTable = {
  explain: { run: explain, fields: ['verbosity'] },
};
