import { InvalidArgumentError } from '../support/errors.js';
import { JOB_STATUSES, type JobStatus } from '../store/job-record.js';
import { plainString } from './plain-string.js';
import type { JobPagePosition, JobPageQuery, JobSummary } from '../store/operations.js';
import { MAX_PAYLOAD_MATCHES, payloadMatchProblem, type PayloadMatch, type PayloadValue } from '../store/payload-match.js';

/** What `loom.jobs.list` takes. Every filter is a plain value, never a query operator. */
export interface JobListFilter {
  /** One status or several. @default every status */
  status?: JobStatus | readonly JobStatus[];
  name?: string;
  queue?: string;
  /** Only jobs created strictly after this instant. */
  createdAfter?: Date;
  /** Only jobs created strictly before this instant. */
  createdBefore?: Date;
  /**
   * Only the job with this idempotency key (live or dead). Indexed in MongoStore (the jobs' unique
   * key index, and one on the dead letters' keys): a page costs one index lookup.
   */
  idempotencyKey?: string;
  /**
   * Only jobs whose payload has these values: `{ orderId: 'o1', 'customer.tier': 'gold' }`. Keys are
   * field paths (names of letters, digits, `_` and `-` joined by dots, no `$`); values are strings,
   * numbers, booleans or null (null also matches a missing field; an array field matches when one
   * element equals the value). At most 5 fields, all of which must match.
   *
   * Payload fields are not indexed: MongoStore walks the page's index range (newest first, within
   * the status, name, queue and creation bounds given) and reads each job's payload until the page
   * is full, so a search costs one document read per job it passes over. A common value fills a
   * page at once; a rare one reads the whole range (every job of the statuses asked for, when
   * nothing else narrows it). Narrow it with `name`, `queue`, `status` or `createdAfter`.
   */
  payload?: Readonly<Record<string, PayloadValue>>;
  /** 1..500. @default 50 */
  limit?: number;
  /** `next` of the previous page, as it was returned; absent for the first page. */
  cursor?: string;
}

/** One page of `loom.jobs.list`: newest first; `next` is there when more jobs follow. */
export interface JobPage {
  jobs: JobSummary[];
  next?: string;
}

/** The largest page `loom.jobs.list` returns. */
export const MAX_JOB_PAGE = 500;
const DEFAULT_JOB_PAGE = 50;

const FILTER_KEYS = new Set(['status', 'name', 'queue', 'createdAfter', 'createdBefore', 'idempotencyKey', 'payload', 'limit', 'cursor']);

function bad(field: string, detail: string): InvalidArgumentError {
  return new InvalidArgumentError(`jobs.list filter.${field}`, `${detail}; nothing was read`);
}

function validDate(value: unknown, field: string): Date {
  if (value instanceof Date && !Number.isNaN(value.getTime())) return value;
  throw bad(field, 'must be a valid Date');
}

/**
 * The payload conditions of a filter, checked: a plain object of field paths to primitive values.
 * An operator object (`{ $gt: 1 }`), a `$` in a path or an empty path is refused.
 */
export function parsePayloadFilter(value: unknown): PayloadMatch[] {
  const proto = value !== null && typeof value === 'object' ? (Object.getPrototypeOf(value) as unknown) : undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value) || (proto !== Object.prototype && proto !== null)) {
    throw bad('payload', 'must be an object of field paths to values, e.g. { orderId: "o1" }');
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0 || entries.length > MAX_PAYLOAD_MATCHES) throw bad('payload', `must have 1 to ${MAX_PAYLOAD_MATCHES} fields`);
  return entries.map(([path, v]) => {
    const match = { path, value: v as PayloadValue };
    const problem = payloadMatchProblem(match);
    if (problem !== undefined) throw bad('payload', problem);
    return match;
  });
}

/** The statuses a filter asks for, checked. */
export function parseStatuses(value: unknown, field = 'status'): JobStatus[] {
  if (value === undefined) return [...JOB_STATUSES];
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.length === 0) throw bad(field, `must be a status or a non-empty array of them (${JOB_STATUSES.join(', ')})`);
  for (const status of list) {
    if (!JOB_STATUSES.includes(status as JobStatus)) throw bad(field, `${JSON.stringify(status)} is not a status (${JOB_STATUSES.join(', ')})`);
  }
  return [...new Set(list as JobStatus[])];
}

/** An opaque cursor: the position of a page's last job, base64url of `[createdAt ms, id]`. */
export function encodeCursor(position: JobPagePosition): string {
  return Buffer.from(JSON.stringify([position.createdAt.getTime(), position.id])).toString('base64url');
}

export function decodeCursor(cursor: unknown): JobPagePosition {
  const malformed = (): InvalidArgumentError => bad('cursor', 'is not a cursor of jobs.list (pass the `next` of the previous page as it was returned)');
  if (typeof cursor !== 'string' || !/^[A-Za-z0-9_-]{1,400}$/.test(cursor)) throw malformed();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw malformed();
  }
  if (!Array.isArray(parsed) || parsed.length !== 2 || !Number.isSafeInteger(parsed[0]) || typeof parsed[1] !== 'string' || parsed[1] === '') throw malformed();
  return { createdAt: new Date(parsed[0] as number), id: parsed[1] };
}

/**
 * Checks a `jobs.list` filter and turns it into the store's page query (asking for one job more
 * than the page, to know whether a next page exists). Refuses unknown fields, operator objects,
 * invalid dates, limits outside 1..500 and cursors it did not make.
 */
export function toPageQuery(filter: unknown): { query: JobPageQuery; limit: number } {
  if (filter === undefined) filter = {};
  if (typeof filter !== 'object' || filter === null || Array.isArray(filter))
    throw new InvalidArgumentError('jobs.list filter', 'must be an object; nothing was read');
  const f = filter as Record<string, unknown>;
  for (const key of Object.keys(f)) if (!FILTER_KEYS.has(key)) throw bad(key, `is not a filter (use ${[...FILTER_KEYS].join(', ')})`);
  const limit = f.limit === undefined ? DEFAULT_JOB_PAGE : f.limit;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_JOB_PAGE)
    throw bad('limit', `must be an integer from 1 to ${MAX_JOB_PAGE}`);
  const query: JobPageQuery = { statuses: parseStatuses(f.status), limit: limit + 1 };
  if (f.name !== undefined) query.name = plainString(f.name, 'jobs.list filter.name', 'nothing was read');
  if (f.queue !== undefined) query.queue = plainString(f.queue, 'jobs.list filter.queue', 'nothing was read');
  if (f.createdAfter !== undefined) query.createdAfter = validDate(f.createdAfter, 'createdAfter');
  if (f.createdBefore !== undefined) query.createdBefore = validDate(f.createdBefore, 'createdBefore');
  if (f.idempotencyKey !== undefined) query.idempotencyKey = plainString(f.idempotencyKey, 'jobs.list filter.idempotencyKey', 'nothing was read');
  if (f.payload !== undefined) query.payload = parsePayloadFilter(f.payload);
  if (f.cursor !== undefined) query.after = decodeCursor(f.cursor);
  return { query, limit };
}

/** The page for `jobs` (up to limit + 1 of them): the first `limit`, and a cursor when more follow. */
export function toJobPage(jobs: JobSummary[], limit: number): JobPage {
  if (jobs.length <= limit) return { jobs };
  const page = jobs.slice(0, limit);
  const last = page[page.length - 1];
  return { jobs: page, next: encodeCursor(last) };
}
