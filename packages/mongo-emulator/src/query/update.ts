/**
 * Update semantics: operator updates (applied by mingo on a clone, after the checks mongod makes
 * and mingo skips), replacements, pipeline updates, `$setOnInsert`, `$currentDate` on the
 * emulator's clock, and the document an upsert inserts.
 */
import { MongoAggregator as Aggregator, MongoQuery, withNow } from './mingo-context.js';
import { flattenAnd } from './implication.js';
import { compileUpdatePipeline, type CompiledPipeline } from './update-pipeline.js';
import { Unhandled } from '../errors.js';
import { update as mingoUpdate } from 'mingo/updater';
import * as updateOperators from 'mingo/operators/update';
import { ObjectId, Timestamp } from 'bson';
import { CommandError } from '../errors.js';
import { compareBson, typeRank, TypeRank } from '../bson-order.js';
import { cloneValue, formatDoc, getPath, idFirst, isPlainObject, setPath, type Doc } from '../values.js';

const OPERATORS = new Set([
  '$set',
  '$unset',
  '$inc',
  '$mul',
  '$min',
  '$max',
  '$rename',
  '$push',
  '$addToSet',
  '$pop',
  '$pull',
  '$pullAll',
  '$bit',
  '$currentDate',
  '$setOnInsert',
]);
const NUMERIC_OPS = new Set(['$inc', '$mul']);
const ARRAY_OPS = new Set(['$push', '$addToSet', '$pop', '$pull', '$pullAll']);
const PIPELINE_STAGES = new Set(['$addFields', '$set', '$project', '$unset', '$replaceRoot', '$replaceWith']);

export interface UpdateOptions {
  query: Doc;
  arrayFilters?: Doc[];
  /** The update is building an upsert's inserted document: `$setOnInsert` applies. */
  inserting: boolean;
  now: Date;
  variables?: Doc;
}

export interface UpdateOutcome {
  doc: Doc;
  modified: boolean;
  kind: 'update' | 'replace';
  /** The paths an operator update changed (unknown for pipelines and replacements). */
  changed?: string[];
}

export function isOperatorUpdate(update: unknown): boolean {
  return isPlainObject(update) && Object.keys(update).length > 0 && Object.keys(update)[0].startsWith('$');
}

function isNumeric(v: unknown): boolean {
  return typeRank(v) === TypeRank.Number;
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (v instanceof Date) return 'date';
  if (typeof v === 'object') return (v as { _bsontype?: string })._bsontype?.toLowerCase() ?? 'object';
  return typeof v === 'number' ? (Number.isInteger(v) ? 'int' : 'double') : typeof v;
}

function checkConflicts(update: Doc): void {
  const seen: string[] = [];
  for (const [op, args] of Object.entries(update)) {
    if (!isPlainObject(args)) continue;
    const paths = Object.keys(args);
    if (op === '$rename') paths.push(...Object.values(args).filter((v): v is string => typeof v === 'string'));
    for (const path of paths) {
      for (const other of seen) {
        if (path === other || path.startsWith(other + '.') || other.startsWith(path + '.')) {
          throw new CommandError(
            'ConflictingUpdateOperators',
            `Updating the path '${path}' would create a conflict at '${other.length < path.length ? other : path}'`,
          );
        }
      }
      seen.push(path);
    }
  }
}

function checkTypes(doc: Doc, update: Doc): void {
  for (const [op, args] of Object.entries(update)) {
    if (!isPlainObject(args)) {
      throw new CommandError(
        'FailedToParse',
        `Modifiers operate on fields but we found type ${typeName(args)} instead. For example: {$mod: {<field>: ...}} not {${op}: ${String(args)}}`,
      );
    }
    for (const [path, arg] of Object.entries(args)) {
      if (path.includes('$')) continue; // positional paths: mingo resolves them
      const current = getPath(doc, path);
      if (NUMERIC_OPS.has(op)) {
        if (!isNumeric(arg)) {
          throw new CommandError(
            'TypeMismatch',
            `Cannot ${op === '$inc' ? 'increment' : 'multiply'} with non-numeric argument: {${path}: ${JSON.stringify(arg)}}`,
          );
        }
        if (current !== undefined && !isNumeric(current)) {
          throw new CommandError(
            'TypeMismatch',
            `Cannot apply ${op} to a value of non-numeric type. {_id: ${formatDoc({ v: doc._id }).slice(5, -2)}} has the field '${path}' of non-numeric type ${typeName(current)}`,
          );
        }
      }
      if (ARRAY_OPS.has(op) && current !== undefined && !Array.isArray(current)) {
        const message =
          op === '$pull' || op === '$pullAll'
            ? `Cannot apply ${op} to a non-array value`
            : `The field '${path}' must be an array but is of type ${typeName(current)} in document {_id: ${formatDoc({ v: doc._id }).slice(5, -2)}}`;
        throw new CommandError('BadValue', message);
      }
    }
  }
}

/** `_id` may only be "set" to its current value (or chosen while building an upsert). */
function checkImmutableId(doc: Doc, modifier: Doc, inserting: boolean): void {
  for (const [op, args] of Object.entries(modifier)) {
    if (!isPlainObject(args)) continue;
    for (const [path, value] of Object.entries(args)) {
      const targets = op === '$rename' && typeof value === 'string' ? [path, value] : [path];
      for (const target of targets) {
        if (target !== '_id' && !target.startsWith('_id.')) continue;
        if (op === '$set' && inserting && !('_id' in doc)) continue;
        if (op === '$set' && target === '_id' && compareBson(doc._id, value) === 0) {
          // A no-op; mingo would refuse any write to _id, so drop it.
          const rest = { ...args };
          delete rest._id;
          modifier.$set = rest;
          continue;
        }
        throw new CommandError('ImmutableField', "Performing an update on the path '_id' would modify the immutable field '_id'");
      }
    }
  }
}

function normalizeOperators(update: Doc, options: UpdateOptions): Doc {
  const out: Doc = {};
  for (const [op, args] of Object.entries(update)) {
    if (!op.startsWith('$')) {
      throw new CommandError('FailedToParse', `Unknown modifier: ${op}. Expected a valid update modifier or pipeline-style update specified as an array`);
    }
    if (!OPERATORS.has(op)) {
      throw new CommandError('FailedToParse', `Unknown modifier: ${op}. Expected a valid update modifier or pipeline-style update specified as an array`);
    }
    if (op === '$setOnInsert') {
      if (options.inserting && isPlainObject(args)) out.$set = { ...(out.$set as Doc | undefined), ...args };
      continue;
    }
    if (op === '$currentDate' && isPlainObject(args)) {
      const set: Doc = { ...(out.$set as Doc | undefined) };
      for (const [path, spec] of Object.entries(args)) {
        const wantsTimestamp = isPlainObject(spec) && spec.$type === 'timestamp';
        set[path] = wantsTimestamp ? new Timestamp({ t: Math.floor(options.now.getTime() / 1000), i: 1 }) : new Date(options.now.getTime());
      }
      out.$set = set;
      continue;
    }
    if (op === '$set' && out.$set) out.$set = { ...(out.$set as Doc), ...(args as Doc) };
    else out[op] = args;
  }
  return out;
}

function assertIdUnchanged(before: Doc, after: Doc): void {
  if ('_id' in before && compareBson(before._id, after._id) !== 0) {
    throw new CommandError('ImmutableField', "Performing an update on the path '_id' would modify the immutable field '_id'");
  }
}

function runPipeline(doc: Doc, pipeline: unknown[], options: UpdateOptions): Doc {
  for (const stage of pipeline) {
    const name = isPlainObject(stage) ? Object.keys(stage)[0] : undefined;
    if (!name || !PIPELINE_STAGES.has(name)) {
      throw new CommandError('InvalidOptions', `${String(name)} is not allowed to be used within an update`);
    }
  }
  const compiled = compiledPipeline(pipeline);
  if (compiled) {
    try {
      return cloneValue(compiled(doc, options.variables, options.now));
    } catch (err) {
      if (!(err instanceof Unhandled)) throw err;
    }
  }
  const [out] = new Aggregator(withNow(pipeline as Doc[], options.now), options.variables ? { variables: options.variables } : {}).run([
    cloneValue(doc),
  ]) as Doc[];
  return out ?? {};
}

/** Update pipelines compiled (`null`: a shape left to mingo), once per command: every document an update matches reuses it. */
const compiledPipelines = new WeakMap<unknown[], CompiledPipeline | null>();

function compiledPipeline(pipeline: unknown[]): CompiledPipeline | null {
  let compiled = compiledPipelines.get(pipeline);
  if (compiled === undefined) {
    try {
      compiled = compileUpdatePipeline(pipeline);
    } catch (err) {
      if (!(err instanceof Unhandled)) throw err;
      compiled = null;
    }
    compiledPipelines.set(pipeline, compiled);
  }
  return compiled;
}

const POSITIONAL = /^(.*?)\.\$(?=\.|$)/;

/**
 * Rewrites `array.$` paths to the index of the first element the query matched there, as mongod
 * does (mingo's own handling rejects two `$` paths under one array as a conflict).
 */
function resolvePositional(doc: Doc, modifier: Doc, options: UpdateOptions): Doc {
  const arrays = new Set<string>();
  for (const args of Object.values(modifier)) {
    if (!isPlainObject(args)) continue;
    for (const path of Object.keys(args)) {
      const m = POSITIONAL.exec(path);
      if (m) arrays.add(m[1]);
    }
  }
  if (arrays.size === 0) return modifier;
  const notFound = () => new CommandError('BadValue', 'The positional operator did not find the match needed from the query.');
  if (options.inserting || arrays.size > 1) throw notFound();
  const [prefix] = arrays;
  const array = getPath(doc, prefix);
  if (!Array.isArray(array)) throw notFound();
  // The query's conditions on this array decide which element `$` is.
  const clauses: Doc[] = [];
  for (const [k, conds] of Object.entries(flattenAnd(options.query))) {
    if (k === prefix || k.startsWith(prefix + '.')) for (const c of conds) clauses.push({ [k]: c });
  }
  if (clauses.length === 0) throw notFound();
  const query = new MongoQuery(clauses.length === 1 ? clauses[0] : { $and: clauses }, options.variables ? { variables: options.variables } : {});
  const index = array.findIndex((el) => {
    const probe: Doc = {};
    setPath(probe, prefix, [el]);
    return query.test(probe);
  });
  if (index < 0) throw notFound();
  const out: Doc = {};
  for (const [op, args] of Object.entries(modifier)) {
    if (!isPlainObject(args)) {
      out[op] = args;
      continue;
    }
    const rewritten: Doc = {};
    for (const [path, value] of Object.entries(args)) rewritten[path.replace(POSITIONAL, `$1.${index}`)] = value;
    out[op] = rewritten;
  }
  return out;
}

type UpdateOperator = (expr: Doc, arrayFilters?: Doc[]) => (obj: Doc) => string[];

/**
 * Applies update operators to `doc` in place; returns the paths they changed. mingo's `update()`
 * builds a fresh context holding its query and expression operator tables on every call (a tenth of
 * a claim's CPU), so each operator function is called directly instead, on its default options. Those
 * copy a value shallowly, hence each operator gets its own deep copy of its arguments. Updates with
 * arrayFilters or $rename keep mingo's whole path: their parameters are resolved across operators.
 */
function applyOperators(doc: Doc, modifier: Doc, arrayFilters: Doc[] | undefined): string[] {
  const operators = updateOperators as unknown as Record<string, UpdateOperator | undefined>;
  const ops = Object.keys(modifier);
  if (ops.length === 0) return [];
  if ((arrayFilters !== undefined && arrayFilters.length > 0) || ops.some((op) => op === '$rename' || !operators[op])) {
    return mingoUpdate(doc, modifier as never, arrayFilters, undefined, { cloneMode: 'deep' });
  }
  const changed: string[] = [];
  for (const op of ops) changed.push(...operators[op]!(cloneValue(modifier[op]) as Doc)(doc));
  return changed.sort();
}

/** Applies an update to a document, returning a new document (the input is never mutated). */
export function applyUpdate(doc: Doc, update: unknown, options: UpdateOptions): UpdateOutcome {
  if (Array.isArray(update)) {
    const after = idFirst(runPipeline(doc, update, options));
    if (!('_id' in after) && '_id' in doc) after._id = doc._id;
    assertIdUnchanged(doc, after);
    return { doc: idFirst(after), modified: compareBson(doc, after) !== 0, kind: 'update' };
  }
  if (!isPlainObject(update)) throw new CommandError('FailedToParse', 'Update argument must be either an object or an array');
  if (isOperatorUpdate(update)) {
    const modifier = normalizeOperators(update as Doc, options);
    checkConflicts(modifier);
    checkImmutableId(doc, modifier, options.inserting);
    checkTypes(doc, modifier);
    const after = cloneValue(doc);
    let changed: string[];
    try {
      const resolved = resolvePositional(doc, modifier, options);
      changed = applyOperators(after, resolved, options.arrayFilters);
    } catch (err) {
      if (err instanceof CommandError) throw err;
      throw new CommandError('BadValue', err instanceof Error ? err.message : String(err));
    }
    assertIdUnchanged(doc, after);
    return { doc: idFirst(after), modified: changed.length > 0, kind: 'update', changed };
  }
  for (const key of Object.keys(update)) {
    if (key.startsWith('$'))
      throw new CommandError(
        'FailedToParse',
        `The dollar ($) prefixed field '${key}' in '${key}' is not allowed in the context of an update's replacement document.`,
      );
  }
  if ('_id' in update && '_id' in doc && compareBson(update._id, doc._id) !== 0) {
    throw new CommandError(
      'ImmutableField',
      `After applying the update, the (immutable) field '_id' was found to have been altered to _id: ${formatDoc({ v: update._id }).slice(5, -2)}`,
    );
  }
  const after: Doc = '_id' in doc ? { _id: doc._id } : {};
  for (const [k, v] of Object.entries(update)) if (k !== '_id') after[k] = cloneValue(v);
  if (!('_id' in doc) && '_id' in update) after._id = update._id;
  return { doc: idFirst(after), modified: compareBson(doc, after) !== 0, kind: 'replace' };
}

/** The equality fields of a query, as an upsert seeds its new document. */
function seedFromQuery(query: Doc, out: Doc): void {
  for (const [key, cond] of Object.entries(query)) {
    if (key === '$and' && Array.isArray(cond)) {
      for (const sub of cond) if (isPlainObject(sub)) seedFromQuery(sub, out);
    } else if (key.startsWith('$')) {
      continue;
    } else if (isPlainObject(cond) && Object.keys(cond).some((k) => k.startsWith('$'))) {
      if ('$eq' in cond) setPath(out, key, cloneValue(cond.$eq));
      else if (Array.isArray(cond.$in) && cond.$in.length === 1) setPath(out, key, cloneValue(cond.$in[0]));
    } else {
      setPath(out, key, cloneValue(cond));
    }
  }
}

/** The document an upsert inserts when nothing matched. */
export function buildUpsertDocument(query: Doc, update: unknown, options: Omit<UpdateOptions, 'inserting'>): Doc {
  let doc: Doc;
  if (isPlainObject(update) && !isOperatorUpdate(update)) {
    doc = applyUpdate({}, update, { ...options, inserting: true }).doc;
    if (!('_id' in doc)) {
      const seeded: Doc = {};
      seedFromQuery(query, seeded);
      if ('_id' in seeded) doc = { _id: seeded._id, ...doc };
    }
  } else {
    const seeded: Doc = {};
    seedFromQuery(query, seeded);
    doc = applyUpdate(seeded, update, { ...options, inserting: true }).doc;
  }
  if (!('_id' in doc)) doc = { _id: new ObjectId(), ...doc };
  return idFirst(doc);
}
