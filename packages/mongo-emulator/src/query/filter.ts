/**
 * Query filters, evaluated by mingo. Operators mingo cannot answer faithfully (geo, text,
 * string `$where`) are refused by name instead of being guessed at.
 */
import { MongoQuery } from './mingo-context.js';
import { CommandError, notImplemented } from '../errors.js';
import { isPlainObject, type Doc } from '../values.js';
import { simpleFieldTests, type FieldTest } from './simple-filter.js';

const UNSUPPORTED = new Set(['$text', '$near', '$nearSphere', '$geoWithin', '$geoIntersects', '$where', '$function', '$accumulator']);

function scan(v: unknown): void {
  if (Array.isArray(v)) v.forEach(scan);
  else if (isPlainObject(v)) {
    for (const [k, sub] of Object.entries(v)) {
      if (UNSUPPORTED.has(k)) throw notImplemented(`query operator '${k}'`);
      scan(sub);
    }
  }
}

export interface Matcher {
  test(doc: Doc): boolean;
}

export function compileFilter(filter: unknown, variables?: Doc): Matcher {
  if (filter === undefined || filter === null) return { test: () => true };
  if (!isPlainObject(filter)) throw new CommandError('TypeMismatch', "BSON field 'filter' is the wrong type, expected type 'object'");
  if (Object.keys(filter).length === 0) return { test: () => true };
  const simple = simpleFieldTests(filter);
  if (simple) return simpleMatcher(simple, () => compileGeneral(filter, variables));
  return compileGeneral(filter, variables);
}

/** Field tests first; a document they cannot decide goes to the general matcher, compiled once if ever. */
function simpleMatcher(tests: FieldTest[], general: () => Matcher): Matcher {
  let fallback: Matcher | undefined;
  return {
    test(doc: Doc): boolean {
      for (const { test } of tests) {
        const verdict = test(doc);
        if (verdict === undefined) return (fallback ??= general()).test(doc);
        if (!verdict) return false;
      }
      return true;
    },
  };
}

function compileGeneral(filter: Doc, variables?: Doc): Matcher {
  scan(filter);
  try {
    const query = new MongoQuery(filter, variables ? { variables } : {});
    return query;
  } catch (err) {
    if (err instanceof CommandError) throw err;
    const message = err instanceof Error ? err.message : String(err);
    const unknown = /unknown query operator (\$\w+)/.exec(message);
    throw new CommandError('BadValue', unknown ? `unknown operator: ${unknown[1]}` : message);
  }
}
