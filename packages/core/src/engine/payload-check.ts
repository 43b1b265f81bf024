import { InvalidPayloadError } from '../support/errors.js';
import type { JobDefinition } from '../jobs/job-definition.js';
import { findPlainDataProblem } from '../support/plain-data.js';

const joinPath = (prefix: string, path: string): string => (prefix && path ? `${prefix}${path.startsWith('[') ? '' : '.'}${path}` : prefix || path);

/**
 * Checks a payload against the plain-data rule and the job's schema, and returns what the handler
 * receives (the schema's output). Throws `InvalidPayloadError` naming the offending path, which
 * `pathPrefix` (e.g. `[2]` in a batch) is put in front of.
 */
export function checkPayload(def: JobDefinition, payload: unknown, pathPrefix = ''): unknown {
  const problem = findPlainDataProblem(payload);
  if (problem) throw new InvalidPayloadError(def.name, joinPath(pathPrefix, problem.path), `${problem.reason} (payloads must be plain data)`);
  if (!def.payload) return payload;
  let result: ReturnType<NonNullable<JobDefinition['payload']>['safeParse']>;
  try {
    result = def.payload.safeParse(payload);
  } catch (err) {
    // Async refinements and throwing transforms land here rather than in the issues list.
    const detail = err instanceof Error ? err.message : String(err);
    throw new InvalidPayloadError(def.name, pathPrefix, `the payload schema threw: ${detail} (payload schemas must be synchronous)`, { cause: err });
  }
  if (result.success) return result.data;
  // Every issue, not just the first: an order with two bad fields names both. The error's `path`
  // is the first issue's; the others follow in the message, up to PAYLOAD_ISSUES_SHOWN in all.
  const issues = result.error.issues.map((issue) => ({ path: joinPath(pathPrefix, issuePath(issue.path)), message: issue.message }));
  const [first, ...others] = issues;
  const shown = others.slice(0, PAYLOAD_ISSUES_SHOWN - 1).map((issue) => `; at ${issue.path || '(root)'}: ${issue.message}`);
  const more = others.length > shown.length ? `; and ${others.length - shown.length} more` : '';
  throw new InvalidPayloadError(def.name, first?.path ?? pathPrefix, `${first?.message ?? 'does not match the payload schema'}${shown.join('')}${more}`, {
    cause: result.error,
  });
}

/** How many schema issues an `INVALID_PAYLOAD` message lists; the rest are counted ("and N more"). */
export const PAYLOAD_ISSUES_SHOWN = 10;

const issuePath = (path: readonly PropertyKey[]): string =>
  path
    .map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))
    .join('.')
    .replace(/\.\[/g, '[');
