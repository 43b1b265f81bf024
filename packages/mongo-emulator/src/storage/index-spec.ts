/**
 * Index definitions: validation of a createIndexes entry, and key extraction from documents
 * (multikey expansion, sparse and partial filtering) exactly as used for uniqueness and scans.
 */
import { MongoQuery as Query } from '../query/mingo-context.js';
import { CommandError, notImplemented } from '../errors.js';
import { isPlainObject, pathHitsArray, pathValues, type Doc } from '../values.js';
import { valueKey } from '../bson-order.js';

export interface IndexSpec {
  name: string;
  fields: string[];
  directions: (1 | -1)[];
  unique: boolean;
  sparse: boolean;
  partialFilterExpression?: Doc;
  expireAfterSeconds?: number;
  /** The index document as listIndexes reports it. */
  description: Doc;
}

const KNOWN_OPTIONS = new Set(['key', 'name', 'unique', 'sparse', 'partialFilterExpression', 'expireAfterSeconds', 'v', 'background', 'hidden']);
const UNSUPPORTED_OPTIONS = new Set([
  'collation',
  'wildcardProjection',
  'weights',
  'default_language',
  'language_override',
  'textIndexVersion',
  '2dsphereIndexVersion',
  'bits',
  'min',
  'max',
  'storageEngine',
]);

/** The name the driver and mongod derive from a key pattern: `a_1_b_-1`. */
export function defaultIndexName(key: Doc): string {
  return Object.entries(key)
    .map(([f, d]) => `${f}_${String(d)}`)
    .join('_');
}

export function parseIndexSpec(raw: Doc): IndexSpec {
  const key = raw.key;
  if (!isPlainObject(key) || Object.keys(key).length === 0) {
    throw new CommandError('CannotCreateIndex', "Index spec must have a non-empty 'key' document");
  }
  for (const option of Object.keys(raw)) {
    if (UNSUPPORTED_OPTIONS.has(option)) throw notImplemented(`index option '${option}'`);
    if (!KNOWN_OPTIONS.has(option)) {
      throw new CommandError('InvalidOptions', `The field '${option}' is not valid for an index specification.`);
    }
  }
  const fields: string[] = [];
  const directions: (1 | -1)[] = [];
  for (const [field, dir] of Object.entries(key)) {
    if (dir === 1 || dir === -1) {
      fields.push(field);
      directions.push(dir);
    } else if (typeof dir === 'number' && dir !== 0) {
      fields.push(field);
      directions.push(dir > 0 ? 1 : -1);
    } else if (typeof dir === 'string') {
      throw notImplemented(`index type '${dir}' (on field '${field}')`);
    } else {
      throw new CommandError('CannotCreateIndex', `Values in the index key pattern can't be 0 or non-numbers: ${field}: ${String(dir)}`);
    }
  }
  const name = typeof raw.name === 'string' ? raw.name : defaultIndexName(key);
  const partial = raw.partialFilterExpression;
  if (partial !== undefined && !isPlainObject(partial)) {
    throw new CommandError('CannotCreateIndex', 'partialFilterExpression must be an object');
  }
  if (partial && raw.sparse) {
    throw new CommandError('CannotCreateIndex', 'cannot mix "partialFilterExpression" and "sparse" options');
  }
  const ttl = raw.expireAfterSeconds;
  if (ttl !== undefined && (typeof ttl !== 'number' || ttl < 0 || !Number.isFinite(ttl))) {
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- the server's message shows the value as sent
    throw new CommandError('CannotCreateIndex', `TTL index 'expireAfterSeconds' option must be a non-negative number: ${String(ttl)}`);
  }
  if (ttl !== undefined && fields.length !== 1) {
    throw new CommandError('CannotCreateIndex', 'TTL indexes are single-field indexes, compound indexes do not support TTL');
  }
  if (name === '_id_' && (raw.unique === false || fields.join() !== '_id')) {
    throw new CommandError('CannotCreateIndex', 'The _id index must be { _id: 1 } and unique');
  }
  const description: Doc = { v: 2, key: { ...key }, name };
  if (raw.unique) description.unique = true;
  if (raw.sparse) description.sparse = true;
  if (partial) description.partialFilterExpression = partial;
  if (ttl !== undefined) description.expireAfterSeconds = ttl;
  if (raw.hidden) description.hidden = true;
  return {
    name,
    fields,
    directions,
    unique: Boolean(raw.unique) || name === '_id_',
    sparse: Boolean(raw.sparse),
    partialFilterExpression: partial as Doc | undefined,
    expireAfterSeconds: ttl as number | undefined,
    description,
  };
}

export const ID_INDEX: IndexSpec = parseIndexSpec({ key: { _id: 1 }, name: '_id_' });

/** Options that identify an index beyond its key (a differing one is error 85). */
export function sameOptions(a: IndexSpec, b: IndexSpec): boolean {
  const norm = (s: IndexSpec) =>
    valueKey({
      unique: s.unique,
      sparse: s.sparse,
      partial: s.partialFilterExpression ?? null,
      ttl: s.expireAfterSeconds ?? null,
    });
  return norm(a) === norm(b);
}

export function sameKey(a: IndexSpec, b: IndexSpec): boolean {
  return valueKey(a.description.key) === valueKey(b.description.key);
}

const partialQueries = new WeakMap<IndexSpec, Query>();

function coveredByPartial(spec: IndexSpec, doc: Doc): boolean {
  if (!spec.partialFilterExpression) return true;
  let q = partialQueries.get(spec);
  if (!q) {
    q = new Query(spec.partialFilterExpression);
    partialQueries.set(spec, q);
  }
  return q.test(doc);
}

/** The common case without arrays or dotted paths: one key, read directly. */
function simpleKey(spec: IndexSpec, doc: Doc): unknown[] | undefined {
  const key: unknown[] = [];
  let present = 0;
  for (const field of spec.fields) {
    if (field.includes('.')) return undefined;
    const v = doc[field];
    if (Array.isArray(v)) return undefined;
    if (v !== undefined) present++;
    key.push(v === undefined ? null : v);
  }
  if (spec.sparse && present === 0) return undefined;
  return key;
}

export interface ExtractedKeys {
  keys: unknown[][];
  multikey: boolean;
}

/**
 * The index keys of a document: one per combination of array elements (at most one field may
 * hold an array, as in mongod). Missing fields index as null; a sparse index skips documents
 * missing every field, a partial index skips documents outside its filter.
 */
export function extractKeys(spec: IndexSpec, doc: Doc): ExtractedKeys {
  if (!coveredByPartial(spec, doc)) return { keys: [], multikey: false };
  const simple = simpleKey(spec, doc);
  if (simple) return { keys: [simple], multikey: false };
  const perField = spec.fields.map((f) => pathValues(doc, f));
  if (spec.sparse && spec.fields.every((f, i) => perField[i].length === 1 && perField[i][0] === undefined && !pathHitsArray(doc, f))) {
    return { keys: [], multikey: false };
  }
  const arrayFields = spec.fields.filter((f) => pathHitsArray(doc, f));
  if (arrayFields.length > 1) {
    throw new CommandError('CannotIndexParallelArrays', `cannot index parallel arrays [${arrayFields[1]}] [${arrayFields[0]}]`);
  }
  let keys: unknown[][] = [[]];
  for (const values of perField) {
    const next: unknown[][] = [];
    const seen = new Set<string>();
    for (const v of values) {
      const norm = v === undefined ? null : v;
      const k = valueKey(norm);
      if (seen.has(k)) continue;
      seen.add(k);
      for (const prefix of keys) next.push([...prefix, norm]);
    }
    keys = next;
  }
  return { keys, multikey: arrayFields.length > 0 };
}
