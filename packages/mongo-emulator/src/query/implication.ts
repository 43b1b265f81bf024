/**
 * Whether a query implies an index's partialFilterExpression (so the partial index holds every
 * document the query can match), for the condition shapes indexes use: $exists, $type, equality
 * and ranges. Anything not provably implied answers false, which only costs an index choice.
 */
import { compareBson, typeRank, TypeRank, valueKey } from '../bson-order.js';
import { isPlainObject, type Doc } from '../values.js';

/** Top-level field conditions of a filter, with nested `$and`s flattened (last one wins). */
export function flattenAnd(filter: Doc, out: Record<string, unknown[]> = {}): Record<string, unknown[]> {
  for (const [k, v] of Object.entries(filter)) {
    if (k === '$and' && Array.isArray(v)) v.forEach((s) => isPlainObject(s) && flattenAnd(s, out));
    else (out[k] ??= []).push(v);
  }
  return out;
}

function asOperators(cond: unknown): Doc {
  return isPlainObject(cond) && Object.keys(cond).length > 0 && Object.keys(cond).every((k) => k.startsWith('$')) ? cond : { $eq: cond };
}

const TYPE_ALIASES: Record<string, TypeRank> = {
  string: TypeRank.String,
  2: TypeRank.String,
  date: TypeRank.Date,
  9: TypeRank.Date,
  bool: TypeRank.Boolean,
  8: TypeRank.Boolean,
  objectId: TypeRank.ObjectId,
  7: TypeRank.ObjectId,
  number: TypeRank.Number,
  object: TypeRank.Object,
  3: TypeRank.Object,
};

function cannotBeMissing(q: Doc): boolean {
  if (q.$exists === true) return true;
  if ('$eq' in q && q.$eq !== null && !Array.isArray(q.$eq)) return true;
  if ('$type' in q && q.$type !== 'null' && q.$type !== 10) return true;
  if (Array.isArray(q.$in) && q.$in.length > 0 && q.$in.every((v) => v !== null && !Array.isArray(v))) return true;
  return ['$gt', '$gte', '$lt', '$lte'].some((op) => op in q && q[op] !== null);
}

function hasType(q: Doc, alias: unknown): boolean {
  if (valueKey(q.$type) === valueKey(alias)) return true;
  const rank = TYPE_ALIASES[String(alias)];
  if (rank === undefined) return false;
  const values = '$eq' in q ? [q.$eq] : Array.isArray(q.$in) ? q.$in : undefined;
  return values !== undefined && values.length > 0 && values.every((v) => v !== undefined && !Array.isArray(v) && typeRank(v) === rank);
}

/** Lower/upper bounds a query condition guarantees, as [value, inclusive]. */
function bound(q: Doc, side: 'lo' | 'hi'): [unknown, boolean] | undefined {
  if ('$eq' in q) return [q.$eq, true];
  const [strict, loose] = side === 'lo' ? ['$gt', '$gte'] : ['$lt', '$lte'];
  if (strict in q) return [q[strict], false];
  if (loose in q) return [q[loose], true];
  return undefined;
}

function withinRange(q: Doc, op: string, limit: unknown): boolean {
  const side = op === '$gt' || op === '$gte' ? 'lo' : 'hi';
  const b = bound(q, side);
  if (!b || typeRank(b[0]) !== typeRank(limit)) return false;
  const c = compareBson(b[0], limit);
  if (side === 'lo') return c > 0 || (c === 0 && (op === '$gte' || !b[1]));
  return c < 0 || (c === 0 && (op === '$lte' || !b[1]));
}

function conditionImplies(qcond: unknown, pcond: unknown): boolean {
  if (valueKey(qcond) === valueKey(pcond)) return true;
  const q = asOperators(qcond);
  const p = asOperators(pcond);
  return Object.entries(p).every(([op, pv]) => {
    switch (op) {
      case '$exists':
        return pv ? cannotBeMissing(q) : q.$exists === false;
      case '$type':
        return hasType(q, pv);
      case '$eq':
        return '$eq' in q && compareBson(q.$eq, pv) === 0;
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte':
        return withinRange(q, op, pv);
      default:
        return false;
    }
  });
}

export function impliesPartialFilter(filter: Doc, partial: Doc): boolean {
  const query = flattenAnd(filter);
  return Object.entries(flattenAnd(partial)).every(([field, pconds]) =>
    pconds.every((pcond) =>
      (query[field] ?? []).some((qcond) => (field.startsWith('$') ? valueKey(qcond) === valueKey(pcond) : conditionImplies(qcond, pcond))),
    ),
  );
}
