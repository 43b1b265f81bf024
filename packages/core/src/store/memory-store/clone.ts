import { LoomError } from '../../support/errors.js';

/** Deeper than this is refused: it is either a cycle or nothing a job store should hold. */
const MAX_DEPTH = 512;

/**
 * Deep-copies plain data (primitives, arrays, plain objects, Dates) the way a database round trip
 * would: an object referenced twice is copied twice, and a field holding `undefined` is dropped like
 * a missing one (the plain-data rule). Other objects (Map, Set, typed arrays, ...)
 * go through `structuredClone`. A cycle is refused with a `NOT_PLAIN_DATA` error.
 *
 * Not `structuredClone` throughout: it builds its copies in Node's main realm, so inside a jest
 * sandbox a copied Date fails `instanceof Date` in the test's realm. Copies made here use the
 * constructors of the realm that loaded this module, as a database driver's decoder would. It is
 * also several times faster for the small objects jobs are made of.
 */
export function clonePlain<T>(value: T): T {
  return copy(value, 0) as T;
}

function copy(value: unknown, depth: number): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (depth > MAX_DEPTH) {
    throw new LoomError('NOT_PLAIN_DATA', `Data nested more than ${MAX_DEPTH} levels deep (or containing a cycle) cannot be stored; flatten it`);
  }
  if (value instanceof Date || Object.prototype.toString.call(value) === '[object Date]') {
    return new Date((value as Date).getTime());
  }
  if (Array.isArray(value)) {
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copy(value[i], depth + 1);
    return out;
  }
  const proto = Object.getPrototypeOf(value) as object | null;
  if (proto !== null && proto !== Object.prototype && Object.getPrototypeOf(proto) !== null) {
    return structuredClone(value);
  }
  const out: Record<string, unknown> = proto === null ? (Object.create(null) as Record<string, unknown>) : {};
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const field = (value as Record<string, unknown>)[key];
    if (field === undefined) continue;
    const child = copy(field, depth + 1);
    // An own `__proto__` key (JSON.parse makes them) must stay a key: assigning it would set the
    // copy's prototype instead and lose the key, as a database round trip does not.
    if (key === '__proto__') Object.defineProperty(out, key, { value: child, enumerable: true, writable: true, configurable: true });
    else out[key] = child;
  }
  return out;
}
