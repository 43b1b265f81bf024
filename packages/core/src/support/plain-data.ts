/**
 * The plain-data rule for everything Loom stores on behalf of users (payloads, step results,
 * progress, results): plain objects, arrays, strings, finite or non-finite numbers, booleans,
 * null, undefined (dropped like a missing field) and valid `Date`s. A document database keeps
 * exactly these; anything else would be silently changed or lost on the way through the store.
 */

/** The largest document MongoDB stores: 16 MiB. Loom refuses bigger values up front. */
export const MAX_PLAIN_DATA_BYTES = 16 * 1024 * 1024;

/**
 * The deepest nesting of objects and arrays Loom stores. MongoDB refuses documents nested more
 * than 100 levels, and a value sits a few levels down inside the job's document (payload, step
 * result, dead letter), so refusing deeper values up front keeps every store's answer the same.
 */
export const MAX_PLAIN_DATA_DEPTH = 90;

/** Why a value is not plain data, and where. */
export interface PlainDataProblem {
  /** Where in the value, e.g. `items[2].callback`; `''` for the value itself. */
  path: string;
  reason: string;
}

/**
 * Finds the first place where `value` breaks the plain-data rule, or returns null. Also estimates
 * the serialized (BSON) size and refuses values over `maxBytes`.
 */
export function findPlainDataProblem(value: unknown, maxBytes = MAX_PLAIN_DATA_BYTES): PlainDataProblem | null {
  const size = sizeOf(value, undefined);
  if (size === NOT_PLAIN) return inspectPlainData(value).problem;
  if (size > maxBytes) {
    return { path: '', reason: `is about ${size} bytes serialized, over the ${maxBytes}-byte limit; store large data elsewhere and pass a reference` };
  }
  return null;
}

/** The estimated serialized (BSON) size of a plain value in bytes, or null when it is not plain data. */
export function plainDataSize(value: unknown): number | null {
  const size = sizeOf(value, undefined);
  return size === NOT_PLAIN ? null : size;
}

const NOT_PLAIN = -1;

/**
 * The fast path of the rule, run on every payload and outcome: the estimated BSON size, or
 * NOT_PLAIN. It builds no paths and no entry arrays (a payload check allocated about 1.5 KB per
 * job, bench/README.md "MemoryStore"); only a value that breaks the rule goes through
 * {@link inspectPlainData}, which says where. The two must agree on what is plain and on the size.
 */
function sizeOf(v: unknown, ancestors: object[] | undefined): number {
  const scalar = scalarSize(v);
  if (scalar !== undefined) return scalar;
  if (typeof v !== 'object') return NOT_PLAIN; // a function, a symbol or a BigInt
  const obj = v as object;
  if (obj instanceof Date) return Number.isNaN(obj.getTime()) ? NOT_PLAIN : 8;
  if (ancestors !== undefined && (ancestors.length >= MAX_PLAIN_DATA_DEPTH || ancestors.includes(obj))) return NOT_PLAIN;
  const isArray = Array.isArray(obj);
  if (isArray && (obj as unknown[]).length === 0) return 5;
  ancestors ??= [];
  let size = 5;
  ancestors.push(obj);
  if (isArray) {
    const arr = obj as unknown[];
    for (let i = 0; i < arr.length; i++) {
      const child = sizeOf(arr[i], ancestors);
      if (child === NOT_PLAIN) return NOT_PLAIN;
      size += 2 + decimalDigits(i) + child;
    }
  } else {
    const proto = Object.getPrototypeOf(obj) as object | null;
    if ((proto !== Object.prototype && proto !== null) || Object.getOwnPropertySymbols(obj).length > 0) return NOT_PLAIN;
    for (const key in obj) {
      if (!Object.hasOwn(obj, key)) continue;
      const child = sizeOf((obj as Record<string, unknown>)[key], ancestors);
      if (child === NOT_PLAIN) return NOT_PLAIN;
      size += 2 + Buffer.byteLength(key, 'utf8') + child;
    }
  }
  ancestors.pop();
  return size;
}

/** The estimated BSON size of a string, number, boolean, undefined or null; undefined for anything else. Both paths size scalars here. */
function scalarSize(v: unknown): number | undefined {
  switch (typeof v) {
    case 'string':
      return 5 + Buffer.byteLength(v, 'utf8');
    case 'number':
      return 8;
    case 'boolean':
      return 1;
    case 'undefined':
      return 0;
  }
  return v === null ? 0 : undefined;
}

/** `String(i).length` for an array index, without the string. */
function decimalDigits(i: number): number {
  let digits = 1;
  while (i >= 10) {
    i = Math.floor(i / 10);
    digits++;
  }
  return digits;
}

/** The slow path: the first problem with its path (and the size), for a value {@link sizeOf} refused. @internal exported for its test */
export function inspectPlainData(value: unknown): { problem: PlainDataProblem | null; size: number } {
  const ancestors: object[] = [];
  const ancestorPaths: string[] = [];
  let problem: PlainDataProblem | null = null;

  // Returns the estimated BSON size of the value as a document element body.
  const visit = (v: unknown, path: string): number => {
    if (problem) return 0;
    const scalar = scalarSize(v);
    if (scalar !== undefined) return scalar;
    switch (typeof v) {
      case 'function':
        problem = { path, reason: 'is a function' };
        return 0;
      case 'symbol':
        problem = { path, reason: 'is a symbol' };
        return 0;
      case 'bigint':
        problem = { path, reason: 'is a BigInt; use a number or a string' };
        return 0;
    }
    const obj = v as object;
    if (obj instanceof Date) {
      if (Number.isNaN(obj.getTime())) problem = { path, reason: 'is an invalid Date' };
      return 8;
    }
    const at = ancestors.indexOf(obj);
    if (at >= 0) {
      problem = { path, reason: `is a cycle back to ${ancestorPaths[at] || '(root)'}` };
      return 0;
    }
    if (ancestors.length >= MAX_PLAIN_DATA_DEPTH) {
      problem = { path, reason: `is nested more than ${MAX_PLAIN_DATA_DEPTH} levels deep (MongoDB stores at most 100 per document); flatten it` };
      return 0;
    }
    const isArray = Array.isArray(obj);
    if (!isArray) {
      const proto = Object.getPrototypeOf(obj) as object | null;
      if (proto !== Object.prototype && proto !== null) {
        const name = (proto as { constructor?: { name?: string } }).constructor?.name || 'an unnamed class';
        problem = { path, reason: `is an instance of ${name}; only plain objects, arrays and Date are allowed` };
        return 0;
      }
      if (Object.getOwnPropertySymbols(obj).length > 0) {
        problem = { path, reason: 'has a symbol key' };
        return 0;
      }
    }
    ancestors.push(obj);
    ancestorPaths.push(path);
    let size = 5;
    if (isArray) {
      const arr = obj as unknown[];
      for (let i = 0; i < arr.length && !problem; i++) {
        size += 2 + String(i).length + visit(arr[i], `${path}[${i}]`);
      }
    } else {
      for (const [key, child] of Object.entries(obj)) {
        if (problem) break;
        size += 2 + Buffer.byteLength(key, 'utf8') + visit(child, path ? `${path}.${key}` : key);
      }
    }
    ancestors.pop();
    ancestorPaths.pop();
    return size;
  };

  const size = visit(value, '');
  return { problem, size };
}
