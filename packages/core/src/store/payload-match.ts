/**
 * Equality searches on payload fields (`jobs.list({ payload: { orderId: 'o1' } })`): the rules a
 * field path and a value must follow before any store builds a query from them, and how a match is
 * decided, so that MemoryStore and MongoStore answer alike.
 */

/** A value a payload field is compared with: primitives only, never an object (a query operator arrives as one). */
export type PayloadValue = string | number | boolean | null;

/** One equality condition: the payload field at `path` (dot-separated names) equals `value`. */
export interface PayloadMatch {
  path: string;
  value: PayloadValue;
}

/** At most this many payload conditions in one search. */
export const MAX_PAYLOAD_MATCHES = 5;
/** Longest string value compared. */
export const MAX_PAYLOAD_VALUE_CHARS = 1_000;
/** A field path: 1..8 names of letters, digits, `_` and `-`, each starting with a letter or `_`, joined by dots. No `$`, no empty names. */
const PATH = /^[A-Za-z_][A-Za-z0-9_-]{0,63}(\.[A-Za-z_][A-Za-z0-9_-]{0,63}){0,7}$/;

/**
 * Why `match` is not a valid payload condition, or undefined when it is. Stores call it on every
 * condition again before building a query (a path lands in a key position of a MongoDB filter).
 */
export function payloadMatchProblem(match: unknown): string | undefined {
  if (typeof match !== 'object' || match === null) return 'must be { path, value }';
  const { path, value } = match as { path?: unknown; value?: unknown };
  if (typeof path !== 'string' || !PATH.test(path)) {
    return `field ${JSON.stringify(path) ?? String(path)} is not a field path (names of letters, digits, _ and -, joined by dots; no $)`;
  }
  return payloadValueProblem(value, path);
}

/** Why `value` cannot be compared with the payload field `path`, or undefined when it can. */
export function payloadValueProblem(value: unknown, path: string): string | undefined {
  if (value === null || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `${path} must be a finite number`;
  if (typeof value === 'string') return value.length <= MAX_PAYLOAD_VALUE_CHARS ? undefined : `${path} is over ${MAX_PAYLOAD_VALUE_CHARS} characters`;
  const got = typeof value === 'object' ? 'an object (query operators are not accepted)' : typeof value;
  return `${path} must be a string, number, boolean or null, got ${got}`;
}

/** The values at a dotted path, stepping into arrays on the way as MongoDB does. */
function valuesAt(root: unknown, names: string[]): unknown[] {
  let current: unknown[] = [root];
  for (const name of names) {
    const next: unknown[] = [];
    for (const value of current) {
      const items = Array.isArray(value) ? value : [value];
      for (const item of items) {
        if (item !== null && typeof item === 'object' && !Array.isArray(item) && Object.prototype.hasOwnProperty.call(item, name)) {
          next.push((item as Record<string, unknown>)[name]);
        }
      }
    }
    current = next;
  }
  return current;
}

/**
 * Whether `payload` meets `match`, with MongoDB's equality: a field holding an array matches when
 * one element equals the value; `null` matches a missing field too.
 */
export function payloadMatches(payload: unknown, match: PayloadMatch): boolean {
  const found = valuesAt(payload, match.path.split('.'));
  if (match.value === null && found.length === 0) return true;
  return found.some((v) => v === match.value || (v === undefined && match.value === null) || (Array.isArray(v) && v.includes(match.value)));
}
