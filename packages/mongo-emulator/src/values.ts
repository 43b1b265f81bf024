/** Document helpers: cloning, dotted-path access as MongoDB resolves it, and value display. */

export type Doc = Record<string, unknown>;

export function isPlainObject(v: unknown): v is Doc {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as object | null;
  return proto === Object.prototype || proto === null;
}

/**
 * Deep copy of plain objects and arrays; bson value classes are immutable and shared. mingo's
 * update mutates in place, so every write works on a clone and the original stays intact for
 * rollback.
 */
export function cloneValue<T>(v: T): T {
  if (Array.isArray(v)) return v.map(cloneValue) as T;
  if (v instanceof Date) return new Date(v.getTime()) as T;
  if (isPlainObject(v)) {
    const out: Doc = {};
    for (const k of Object.keys(v)) out[k] = cloneValue(v[k]);
    return out as T;
  }
  return v;
}

/**
 * Every value a dotted path reaches, descending into arrays (the multikey rule). A path that
 * reaches nothing yields `[undefined]` so missing fields index and sort as null.
 */
export function pathValues(doc: unknown, path: string, expandLeafArrays = true): unknown[] {
  const out: unknown[] = [];
  collect(doc, path.split('.'), 0, out, expandLeafArrays);
  return out.length === 0 ? [undefined] : out;
}

function collect(v: unknown, parts: string[], i: number, out: unknown[], expandLeaf: boolean): void {
  if (i === parts.length) {
    if (Array.isArray(v) && expandLeaf) {
      if (v.length === 0) out.push(undefined);
      else out.push(...(v as unknown[]));
    } else out.push(v);
    return;
  }
  if (Array.isArray(v)) {
    const part = parts[i];
    if (/^\d+$/.test(part) && Number(part) < v.length) collect(v[Number(part)], parts, i + 1, out, expandLeaf);
    for (const el of v) if (isPlainObject(el)) collect(el, parts, i, out, expandLeaf);
    return;
  }
  if (isPlainObject(v)) {
    if (parts[i] in v) collect(v[parts[i]], parts, i + 1, out, expandLeaf);
    return;
  }
}

/** True if any value on the path is an array (the index becomes multikey). */
export function pathHitsArray(doc: unknown, path: string): boolean {
  const parts = path.split('.');
  let cur: unknown = doc;
  for (const part of parts) {
    if (Array.isArray(cur)) return true;
    if (!isPlainObject(cur)) return false;
    cur = cur[part];
  }
  return Array.isArray(cur);
}

/** The single value at a dotted path through objects only (no array traversal). */
export function getPath(doc: unknown, path: string): unknown {
  let cur: unknown = doc;
  for (const part of path.split('.')) {
    if (isPlainObject(cur)) cur = cur[part];
    else if (Array.isArray(cur) && /^\d+$/.test(part)) cur = cur[Number(part)];
    else return undefined;
  }
  return cur;
}

/** Sets a dotted path, creating intermediate objects. */
export function setPath(doc: Doc, path: string, value: unknown): void {
  const parts = path.split('.');
  let cur: Doc = doc;
  for (let i = 0; i < parts.length - 1; i++) {
    const next = cur[parts[i]];
    if (!isPlainObject(next)) cur[parts[i]] = {};
    cur = cur[parts[i]] as Doc;
  }
  cur[parts[parts.length - 1]] = value;
}

/** Returns the doc with `_id` as its first field, as mongod stores it. */
export function idFirst(doc: Doc): Doc {
  if (Object.keys(doc)[0] === '_id' || !('_id' in doc)) return doc;
  const { _id, ...rest } = doc;
  return { _id, ...rest };
}

/** Shell-like rendering used in server messages, e.g. `{ email: "a@b.c" }`. */
export function formatValue(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (v === null) return 'null';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (v instanceof Date) return `new Date(${v.getTime()})`;
  if (Array.isArray(v)) return `[ ${v.map(formatValue).join(', ')} ]`;
  // A bson value class: each renders itself with its own toString (an ObjectId as its hex string).
  const bson = v as { _bsontype?: string; toString(): string };
  if (bson._bsontype === 'ObjectId') return `ObjectId('${bson.toString()}')`;
  if (bson._bsontype) return `${bson._bsontype}(${bson.toString()})`;
  if (isPlainObject(v)) return formatDoc(v);
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- anything else (a function, a class instance) as JavaScript shows it
  return String(v);
}

export function formatDoc(doc: Doc): string {
  const keys = Object.keys(doc);
  if (keys.length === 0) return '{}';
  return `{ ${keys.map((k) => `${k}: ${formatValue(doc[k])}`).join(', ')} }`;
}
