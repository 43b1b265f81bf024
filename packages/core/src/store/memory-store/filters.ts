import type { JobRecord } from '../job-record.js';
import { compareListOrder, type JobPageQuery } from '../operations.js';
import { payloadMatches } from '../payload-match.js';
import type { DeadLetterFilter, JobFilter } from '../store.js';

/** True when `record` matches every field set in `filter` (AND). */
export function matchesJobFilter(record: JobRecord, filter: JobFilter): boolean {
  return (
    (filter.name === undefined || record.name === filter.name) &&
    (filter.queue === undefined || record.queue === filter.queue) &&
    (filter.status === undefined || filter.status.includes(record.status)) &&
    (filter.parentId === undefined || record.parentId === filter.parentId) &&
    (filter.idempotencyKey === undefined || record.idempotencyKey === filter.idempotencyKey) &&
    (filter.scheduledBefore === undefined || (record.scheduledFor !== undefined && record.scheduledFor < filter.scheduledBefore))
  );
}

/** True when `record` matches a page query: its statuses, name, queue, creation range, key, payload, and comes after `after`. */
export function matchesJobPageQuery(record: JobRecord, query: JobPageQuery): boolean {
  return (
    query.statuses.includes(record.status) &&
    (query.name === undefined || record.name === query.name) &&
    (query.queue === undefined || record.queue === query.queue) &&
    (query.createdAfter === undefined || record.createdAt.getTime() > query.createdAfter.getTime()) &&
    (query.createdBefore === undefined || record.createdAt.getTime() < query.createdBefore.getTime()) &&
    (query.after === undefined || compareListOrder(query.after, record) < 0) &&
    (query.idempotencyKey === undefined || record.idempotencyKey === query.idempotencyKey) &&
    (query.payload === undefined || query.payload.every((match) => payloadMatches(record.payload, match)))
  );
}

/** True when a dead letter matches every field set in `filter` (AND); `before` is exclusive. */
export function matchesDeadLetterFilter(letter: { job: JobRecord; diedAt: Date }, filter: DeadLetterFilter): boolean {
  return (
    (filter.name === undefined || letter.job.name === filter.name) &&
    (filter.queue === undefined || letter.job.queue === filter.queue) &&
    (filter.before === undefined || letter.diedAt.getTime() < filter.before.getTime())
  );
}

/** Keeps at most `limit` items (all when `limit` is undefined). */
export function takeLimit<T>(items: T[], limit: number | undefined): T[] {
  return limit === undefined ? items : items.slice(0, Math.max(0, limit));
}
