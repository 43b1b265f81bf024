/**
 * find/findAndModify projections of top-level fields only, applied without mingo: mingo builds a
 * cursor and its projection handlers for every document, and its `$slice` walks the whole array
 * (a flow permit's reply, `{ s: { $slice: -k } }` over hundreds of starts, cost more than the
 * update itself). The shapes taken here, with mongod's (4.4+) answers:
 * - inclusion (`1`/`true`): `_id` (unless `_id: 0`) and the named fields, in the document's order;
 * - exclusion (`0`/`false`), or `$slice` alone or with exclusions (`$slice` by itself is an
 *   exclusion): every other field, in the document's order;
 * - `$slice: n` (first n, or last -n) or `$slice: [skip, limit]` (skip < 0 counts from the end,
 *   limit > 0) on a top-level field: an array is cut, any other value is returned as it is, a
 *   missing field stays missing.
 * `_id` is always the first field. Anything else (dotted paths, `$slice` beside inclusions, other
 * values, invalid `$slice` arguments, `_id` under `$slice`) is left to the general implementation,
 * which also gives the errors.
 */
import { isPlainObject, type Doc } from '../values.js';

type Slice = (values: unknown[]) => unknown[];

const INT32_MAX = 2 ** 31 - 1;

function isInt32(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && Math.abs(v) <= INT32_MAX;
}

/** The cut `$slice`'s argument asks for, or undefined when it is not a valid argument this file takes. */
function sliceOf(arg: unknown): Slice | undefined {
  if (isInt32(arg)) return arg >= 0 ? (values) => values.slice(0, arg) : (values) => values.slice(Math.max(0, values.length + arg));
  if (Array.isArray(arg) && arg.length === 2 && isInt32(arg[0]) && isInt32(arg[1]) && arg[1] > 0) {
    const [skip, limit] = arg as [number, number];
    return (values) => {
      const start = skip >= 0 ? Math.min(skip, values.length) : Math.max(0, values.length + skip);
      return values.slice(start, start + limit);
    };
  }
  return undefined;
}

/**
 * The projector for `spec`, or undefined when `spec` is not one of the shapes above. `spec` is a
 * non-empty plain object.
 */
export function compileTopLevelProjection(spec: Doc): ((doc: Doc) => Doc) | undefined {
  let keepId = true;
  const included = new Set<string>();
  const excluded = new Set<string>();
  const slices = new Map<string, Slice>();
  for (const key of Object.keys(spec)) {
    if (key === '' || key.includes('.') || key.startsWith('$')) return undefined;
    const value = spec[key];
    if (value === 1 || value === true || value === 0 || value === false) {
      const include = value === 1 || value === true;
      if (key === '_id') keepId = include;
      else (include ? included : excluded).add(key);
      continue;
    }
    if (key === '_id' || !isPlainObject(value)) return undefined;
    const args = Object.keys(value);
    if (args.length !== 1 || args[0] !== '$slice') return undefined;
    const slice = sliceOf(value.$slice);
    if (!slice) return undefined;
    slices.set(key, slice);
  }
  if (included.size > 0) {
    if (excluded.size > 0 || slices.size > 0) return undefined; // an error, or `$slice` in an inclusion: mingo's
    return (doc) => {
      const out: Doc = {};
      if (keepId && '_id' in doc) out._id = doc._id;
      for (const key of Object.keys(doc)) if (included.has(key)) out[key] = doc[key];
      return out;
    };
  }
  if (excluded.size === 0 && slices.size === 0 && keepId) {
    // `{ _id: 1 }` alone: only the `_id`.
    return (doc) => ('_id' in doc ? { _id: doc._id } : {});
  }
  return (doc) => {
    const out: Doc = {};
    if (keepId && '_id' in doc) out._id = doc._id;
    for (const key of Object.keys(doc)) {
      if (key === '_id' || excluded.has(key)) continue;
      const value = doc[key];
      const slice = slices.get(key);
      out[key] = slice !== undefined && Array.isArray(value) ? slice(value) : value;
    }
    return out;
  };
}
