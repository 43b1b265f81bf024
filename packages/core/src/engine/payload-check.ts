import { InvalidPayloadError, PayloadTooLargeError } from '../support/errors.js';
import type { JobDefinition } from '../jobs/job-definition.js';
import { findPlainDataProblem, MAX_PLAIN_DATA_BYTES, plainDataSize } from '../support/plain-data.js';
import type { PayloadLimits } from '../store/payload-limits.js';

const joinPath = (prefix: string, path: string): string => (prefix && path ? `${prefix}${path.startsWith('[') ? '' : '.'}${path}` : prefix || path);

/**
 * Checks a payload against the plain-data rule, the store's `maxPayloadSize` (`limits`; without
 * it the 16 MiB of one document) and the job's schema, and returns what the handler receives (the
 * schema's output). Throws `InvalidPayloadError` naming the offending path, which `pathPrefix`
 * (e.g. `[2]` in a batch) is put in front of, or `PayloadTooLargeError` (`PAYLOAD_TOO_LARGE`).
 */
export function checkPayload(def: JobDefinition, payload: unknown, pathPrefix = '', limits?: PayloadLimits): unknown {
  return checkSizedPayload(def, payload, pathPrefix, limits).value;
}

/**
 * {@link checkPayload}, also giving the payload's estimated size: a run checks its payload at the
 * start and counts the same size again in its completed record (`completedJobTooLarge`), so it
 * measures it once.
 */
export function checkSizedPayload(def: JobDefinition, payload: unknown, pathPrefix = '', limits?: PayloadLimits): { value: unknown; size: number } {
  const size = plainDataSize(payload);
  if (size === null) {
    const problem = findPlainDataProblem(payload, Number.POSITIVE_INFINITY)!;
    throw new InvalidPayloadError(def.name, joinPath(pathPrefix, problem.path), `${problem.reason} (payloads must be plain data)`);
  }
  const maxBytes = limits?.maxPayloadSize ?? MAX_PLAIN_DATA_BYTES;
  if (size > maxBytes) throw new PayloadTooLargeError(`The payload of job "${def.name}"${pathPrefix ? ` at ${pathPrefix}` : ''}`, size, maxBytes);
  if (!def.payload) return { value: payload, size };
  let result: ReturnType<NonNullable<JobDefinition['payload']>['safeParse']>;
  try {
    result = def.payload.safeParse(payload);
  } catch (err) {
    // Async refinements and throwing transforms land here rather than in the issues list.
    const detail = err instanceof Error ? err.message : String(err);
    throw new InvalidPayloadError(def.name, pathPrefix, `the payload schema threw: ${detail} (payload schemas must be synchronous)`, { cause: err });
  }
  if (result.success) return { value: result.data, size };
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
