/**
 * Sort specifications and the comparator mongod uses: BSON order, arrays sort by their smallest
 * element ascending and their largest descending, missing fields sort as null.
 */
import { compareBson } from '../bson-order.js';
import { notImplemented, badValue } from '../errors.js';
import { isPlainObject, pathValues, type Doc } from '../values.js';

export type SortSpec = { field: string; dir: 1 | -1 }[];

export function parseSort(raw: unknown): SortSpec {
  if (raw === undefined || raw === null) return [];
  if (!isPlainObject(raw)) throw badValue('sort must be an object');
  return Object.entries(raw).map(([field, dir]) => {
    if (field === '$natural') throw notImplemented("sort on '$natural'");
    if (isPlainObject(dir)) throw notImplemented(`sort by ${JSON.stringify(dir)} on '${field}'`);
    if (dir === 1 || dir === -1) return { field, dir };
    if (dir === 'asc' || dir === 'ascending') return { field, dir: 1 as const };
    if (dir === 'desc' || dir === 'descending') return { field, dir: -1 as const };
    throw badValue(`$sort key ordering must be 1 (for ascending) or -1 (for descending)`);
  });
}

function sortKey(doc: Doc, field: string, dir: 1 | -1): unknown {
  const values = pathValues(doc, field);
  let best: unknown = values[0] === undefined ? null : values[0];
  for (let i = 1; i < values.length; i++) {
    const v = values[i] === undefined ? null : values[i];
    const c = compareBson(v, best);
    if ((dir === 1 && c < 0) || (dir === -1 && c > 0)) best = v;
  }
  return best;
}

/** A comparator over the first `length` fields of the spec. */
export function sortComparator(spec: SortSpec, length = spec.length): (a: Doc, b: Doc) => number {
  const fields = spec.slice(0, length);
  return (a, b) => {
    for (const { field, dir } of fields) {
      const c = compareBson(sortKey(a, field, dir), sortKey(b, field, dir));
      if (c !== 0) return c * dir;
    }
    return 0;
  };
}
