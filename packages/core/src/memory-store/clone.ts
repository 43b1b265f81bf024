/**
 * Deep-copies plain data (primitives, arrays, plain objects, Dates), keeping shared references and
 * cycles as they were. Other objects (Map, Set, typed arrays, ...) go through `structuredClone`.
 *
 * Not `structuredClone` throughout: it builds its copies in Node's main realm, so inside a jest
 * sandbox a cloned Date fails `instanceof Date` in the test's realm. Copies made here use the
 * constructors of the realm that loaded this module, as a database driver's decoder would.
 */
export function clonePlain<T>(value: T): T {
  return copy(value, new Map()) as T;
}

function copy(value: unknown, seen: Map<object, unknown>): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const known = seen.get(value);
  if (known !== undefined) return known;
  if (value instanceof Date || Object.prototype.toString.call(value) === '[object Date]') {
    return new Date((value as Date).getTime());
  }
  if (Array.isArray(value)) {
    const out: unknown[] = new Array(value.length);
    seen.set(value, out);
    for (let i = 0; i < value.length; i++) out[i] = copy(value[i], seen);
    return out;
  }
  const proto = Object.getPrototypeOf(value) as object | null;
  if (proto !== null && proto !== Object.prototype && Object.getPrototypeOf(proto) !== null) {
    return structuredClone(value);
  }
  const out: Record<string, unknown> = proto === null ? Object.create(null) : {};
  seen.set(value, out);
  for (const key of Object.keys(value)) out[key] = copy((value as Record<string, unknown>)[key], seen);
  return out;
}
