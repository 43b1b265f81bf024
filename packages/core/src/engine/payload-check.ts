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
  const issue = result.error.issues[0];
  const path = (issue?.path ?? []).map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.').replace(/\.\[/g, '[');
  throw new InvalidPayloadError(def.name, joinPath(pathPrefix, path), issue?.message ?? 'does not match the payload schema', { cause: result.error });
}
