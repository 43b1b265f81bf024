/**
 * The aggregation stages that write: `$out` replaces a collection's documents with the
 * pipeline's results (keeping the target's indexes), `$merge` folds them into a collection by
 * its `on` fields (whenMatched: merge | replace | keepExisting | fail | pipeline, whenNotMatched:
 * insert | discard | fail). Both must be the last stage and are refused inside transactions, as
 * on mongod. Writes go through committed views, so indexes, unique keys and change events apply.
 */
import { ObjectId } from 'bson';
import { CommandError } from '../errors.js';
import { valueKey } from '../bson-order.js';
import type { Engine } from '../engine.js';
import type { CollectionView, Item } from '../views.js';
import { idFirst, isPlainObject, pathValues, type Doc } from '../values.js';
import { duplicateKeyError } from '../storage/collection.js';
import { ID_INDEX } from '../storage/index-spec.js';
import { validateCollectionName } from '../storage/catalog.js';
import { checkInsertable, checkUpdated } from '../document-limits.js';
import { applyUpdate } from './update.js';
import { matchingItems } from './execute.js';

export const WRITE_STAGES = new Set(['$out', '$merge']);

function target(spec: unknown, db: string, stage: string): { db: string; coll: string } {
  if (typeof spec === 'string') return { db, coll: validateCollectionName(db, spec) };
  if (isPlainObject(spec) && typeof spec.coll === 'string') {
    const targetDb = typeof spec.db === 'string' ? spec.db : db;
    return { db: targetDb, coll: validateCollectionName(targetDb, spec.coll) };
  }
  throw new CommandError('FailedToParse', `${stage} needs a collection name or { db, coll }, got ${JSON.stringify(spec)}`);
}

function withId(doc: Doc): Doc {
  return idFirst('_id' in doc ? doc : { _id: new ObjectId(), ...doc });
}

/** `$out`: the target ends up holding exactly `docs` (all checked before anything is replaced). */
export function runOut(engine: Engine, db: string, spec: unknown, docs: Doc[]): void {
  const to = target(spec, db, '$out');
  const seen = new Set<string>();
  const rows = docs.map(withId);
  for (const doc of rows) {
    checkInsertable(doc);
    const key = valueKey(doc._id);
    if (seen.has(key)) throw duplicateKeyError(`${to.db}.${to.coll}`, ID_INDEX, [doc._id]);
    seen.add(key);
  }
  const view = engine.view(to.db, to.coll);
  const old = [...matchingItems(view, {}, [])];
  for (const item of old) view.remove(item);
  engine.catalog.getOrCreate(to.db, to.coll);
  for (const doc of rows) view.insert(doc);
}

interface MergeSpec {
  into: { db: string; coll: string };
  on: string[];
  whenMatched: string | Doc[];
  whenNotMatched: string;
  variables?: Doc;
}

function parseMerge(spec: unknown, db: string): MergeSpec {
  const raw = typeof spec === 'string' ? { into: spec } : spec;
  if (!isPlainObject(raw)) throw new CommandError('FailedToParse', '$merge needs a collection name or a specification object');
  for (const key of Object.keys(raw)) {
    if (!['into', 'on', 'whenMatched', 'whenNotMatched', 'let'].includes(key))
      throw new CommandError('IDLUnknownField', `BSON field '$merge.${key}' is an unknown field.`);
  }
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- field names as sent; MongoDB reads them as strings
  const on = raw.on === undefined ? ['_id'] : Array.isArray(raw.on) ? raw.on.map(String) : [String(raw.on)];
  const whenMatched = (raw.whenMatched as string | Doc[] | undefined) ?? 'merge';
  if (!Array.isArray(whenMatched) && !['merge', 'replace', 'keepExisting', 'fail'].includes(whenMatched)) {
    throw new CommandError('BadValue', `Enumeration value '${String(whenMatched)}' for field '$merge.whenMatched' is not a valid value.`);
  }
  const whenNotMatched = (raw.whenNotMatched as string | undefined) ?? 'insert';
  if (!['insert', 'discard', 'fail'].includes(whenNotMatched)) {
    throw new CommandError('BadValue', `Enumeration value '${whenNotMatched}' for field '$merge.whenNotMatched' is not a valid value.`);
  }
  return { into: target(raw.into, db, '$merge'), on, whenMatched, whenNotMatched, variables: raw.let as Doc | undefined };
}

/** `$merge`, document by document, in result order (mongod gives no atomicity across documents either). */
export function runMerge(engine: Engine, db: string, spec: unknown, docs: Doc[], now: Date): void {
  const merge = parseMerge(spec, db);
  const view = engine.view(merge.into.db, merge.into.coll);
  const onId = merge.on.length === 1 && merge.on[0] === '_id';
  if (!onId) requireUniqueIndex(view, merge.on);
  for (const source of docs) {
    const match = findMatch(view, merge.on, source);
    if (!match) {
      if (merge.whenNotMatched === 'discard') continue;
      if (merge.whenNotMatched === 'fail')
        throw new CommandError(13113, '$merge could not find a matching document in the target collection for at least one document in the source collection');
      const doc = withId(source);
      checkInsertable(doc);
      view.insert(doc);
      continue;
    }
    applyMatched(view, merge, match, source, now);
  }
}

function applyMatched(view: CollectionView, merge: MergeSpec, match: Item, source: Doc, now: Date): void {
  const current = match.doc;
  let after: Doc;
  if (Array.isArray(merge.whenMatched)) {
    const variables = { ...(merge.variables ?? {}), new: source };
    after = applyUpdate(current, merge.whenMatched, { query: {}, inserting: false, now, variables }).doc;
  } else {
    switch (merge.whenMatched) {
      case 'keepExisting':
        return;
      case 'fail':
        throw duplicateKeyError(view.ns, ID_INDEX, [current._id]);
      case 'replace':
        after = idFirst({ ...source, _id: current._id });
        break;
      default:
        after = idFirst({ ...current, ...source, _id: current._id });
    }
  }
  checkUpdated(after);
  view.update(match, after, merge.whenMatched === 'replace' ? 'replace' : 'update');
}

function findMatch(view: CollectionView, on: string[], source: Doc): Item | undefined {
  const filter: Doc = {};
  for (const field of on) {
    const values = pathValues(source, field, false);
    if (values.length !== 1 || Array.isArray(values[0])) {
      throw new CommandError(51185, `$merge write error: 'on' field '${field}' is an array or missing in one of the documents`);
    }
    filter[field] = values[0] === undefined ? null : values[0];
  }
  if (on.length === 1 && on[0] === '_id' && filter._id === null) return undefined;
  const first = matchingItems(view, filter, []).next();
  return first.done ? undefined : first.value;
}

function requireUniqueIndex(view: CollectionView, on: string[]): void {
  const coll = view.collection();
  const wanted = [...on].sort().join(',');
  for (const index of coll?.indexes.values() ?? []) {
    if (index.spec.unique && !index.spec.partialFilterExpression && [...index.spec.fields].sort().join(',') === wanted) return;
  }
  throw new CommandError(51183, `Cannot find index to verify that join fields will be unique`);
}
