/**
 * A `$project` stage that only includes plain field paths (`{ a: 1, 'b.c': true }`), applied
 * without mingo: every change event of a stream goes through its pipeline, and mingo builds its
 * projection handlers anew for each document it is given. The result is mongod's: fields in the
 * order of the input document, `_id` kept unless named otherwise, a path through an array applied
 * to each element that is a document (or an array), other elements and scalar values on the way
 * left out, an included sub-document path on a missing or scalar field left out entirely.
 */
import { isPlainObject, type Doc } from '../values.js';

type PathTree = Map<string, PathTree | true>;

/**
 * The projector for `spec`, or undefined when it is anything but an inclusion of plain paths
 * (expressions, exclusions, `$` paths, colliding paths): those go to the general implementation.
 */
export function compileInclusion(spec: unknown): ((doc: Doc) => Doc) | undefined {
  if (!isPlainObject(spec)) return undefined;
  const keys = Object.keys(spec);
  if (keys.length === 0) return undefined;
  const tree: PathTree = new Map();
  for (const path of keys) {
    const value = spec[path];
    if (value !== 1 && value !== true) return undefined;
    const parts = path.split('.');
    if (parts.some((p) => p === '' || p.includes('$'))) return undefined;
    let node = tree;
    for (let i = 0; i < parts.length; i++) {
      const existing = node.get(parts[i]);
      if (i === parts.length - 1) {
        if (existing !== undefined) return undefined; // a path collision: mongod refuses it
        node.set(parts[i], true);
      } else {
        if (existing === true) return undefined;
        let next = existing;
        if (next === undefined) node.set(parts[i], (next = new Map()));
        node = next;
      }
    }
  }
  return (doc) => projectDocument(doc, tree, true);
}

function projectDocument(doc: Doc, tree: PathTree, top: boolean): Doc {
  const out: Doc = {};
  for (const key of Object.keys(doc)) {
    const sub = tree.get(key);
    if (sub === undefined) {
      if (top && key === '_id') out._id = doc._id;
      continue;
    }
    const value = doc[key];
    if (sub === true) out[key] = value;
    else if (isPlainObject(value)) out[key] = projectDocument(value, sub, false);
    else if (Array.isArray(value)) out[key] = projectArray(value, sub);
  }
  return out;
}

function projectArray(values: unknown[], tree: PathTree): unknown[] {
  const out: unknown[] = [];
  for (const value of values) {
    if (isPlainObject(value)) out.push(projectDocument(value, tree, false));
    else if (Array.isArray(value)) out.push(projectArray(value, tree));
  }
  return out;
}
