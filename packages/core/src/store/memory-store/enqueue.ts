/**
 * Enqueues of a MemoryStore: new records, deduplicated by idempotency key (against the store, the
 * open transaction and the batch itself), debounced onto the queued job holding their debounce key
 * (`debounce.ts`), or buffered in a transaction until it commits.
 */
import { randomUUID } from 'node:crypto';
import { LoomError } from '../../support/errors.js';
import type { EnqueueResult, JobRecord, NewJob } from '../job-record.js';
import { assertNewJob } from './arguments.js';
import { clonePlain } from './clone.js';
import { debounceInTransaction, debouncedUpdate, hasDebounced } from './debounce.js';
import { MemoryTransaction } from './memory-transaction.js';
import { copyDate } from './record-copy.js';
import { sweep } from './retention.js';
import type { MemoryState } from './state.js';
import { insert, transition } from './transition.js';

export function enqueue(state: MemoryState, jobs: NewJob[], opts: { now: Date; session?: unknown }): EnqueueResult[] {
  for (const job of jobs) assertNewJob(job, opts.now);
  const debounced = hasDebounced(jobs);
  if (opts.session !== undefined) {
    if (debounced) throw debounceInTransaction();
    return enqueueInTransaction(state, MemoryTransaction.of(opts.session, state), jobs, opts.now);
  }
  sweep(state, opts.now);
  if (debounced) return jobs.map((job) => enqueueOne(state, job, opts.now));
  const { results, created } = prepareEnqueue(state, jobs, opts.now, undefined);
  insert(state, created, opts.now);
  return results;
}

/** One job of a batch with debounced jobs: those update the queued job of their key, if there is one. */
function enqueueOne(state: MemoryState, job: NewJob, now: Date): EnqueueResult {
  const pending = state.debounce.holder(job.debounceKey);
  if (!pending) {
    const { results, created } = prepareEnqueue(state, [job], now, undefined);
    insert(state, created, now);
    return results[0]!;
  }
  transition(state, pending, 'debounce', now, debouncedUpdate(job));
  return { id: pending.record.id, deduplicated: false, debounced: true };
}

/** Builds the records for `jobs`, deduplicating against stored keys, `pending` keys and the batch. */
function prepareEnqueue(
  state: MemoryState,
  jobs: NewJob[],
  now: Date,
  pending: Map<string, string> | undefined,
): { results: EnqueueResult[]; created: JobRecord[] } {
  const batch = new Map<string, string>();
  const results: EnqueueResult[] = [];
  const created: JobRecord[] = [];
  for (const job of jobs) {
    const key = job.idempotencyKey;
    const existing = key === undefined ? undefined : (state.keys.get(key) ?? pending?.get(key) ?? batch.get(key));
    if (existing !== undefined) {
      results.push({ id: existing, deduplicated: true });
      continue;
    }
    const record = newRecord(job, now);
    if (key !== undefined) batch.set(key, record.id);
    results.push({ id: record.id, deduplicated: false });
    created.push(record);
  }
  return { results, created };
}

function enqueueInTransaction(state: MemoryState, tx: MemoryTransaction, jobs: NewJob[], now: Date): EnqueueResult[] {
  const { results, created } = prepareEnqueue(state, jobs, now, tx.keys);
  for (const record of created) if (record.idempotencyKey !== undefined) tx.keys.set(record.idempotencyKey, record.id);
  tx.buffer({
    check: () => {
      for (const record of created) {
        const holder = record.idempotencyKey === undefined ? undefined : state.keys.get(record.idempotencyKey);
        if (holder !== undefined) {
          throw new LoomError(
            'STORE_ERROR',
            `Transaction aborted: idempotency key ${JSON.stringify(record.idempotencyKey)} was taken by job ${holder} ` +
              'while the transaction ran; nothing was committed. Run the transaction again: the enqueue will then deduplicate',
          );
        }
      }
    },
    apply: () => insert(state, created, now),
  });
  return results;
}

function newRecord(job: NewJob, now: Date): JobRecord {
  const record: JobRecord = {
    id: randomUUID(),
    name: job.name,
    queue: job.queue,
    payload: clonePlain(job.payload),
    status: 'queued',
    priority: job.priority,
    runAt: copyDate(job.runAt),
    attempt: 0,
    maxAttempts: job.maxAttempts,
    errors: [],
    steps: job.steps === undefined ? [] : clonePlain(job.steps),
    signals: [],
    createdAt: copyDate(now),
    updatedAt: copyDate(now),
  };
  if (job.idempotencyKey !== undefined) record.idempotencyKey = job.idempotencyKey;
  if (job.parentId !== undefined) record.parentId = job.parentId;
  if (job.scheduledFor !== undefined) record.scheduledFor = copyDate(job.scheduledFor);
  if (job.trace !== undefined) record.trace = clonePlain(job.trace);
  if (job.rateLimitKey !== undefined) record.rateLimitKey = job.rateLimitKey;
  if (job.groupKey !== undefined) record.groupKey = job.groupKey;
  if (job.debounceKey !== undefined) record.debounceKey = job.debounceKey;
  if (job.forkedFrom !== undefined) record.forkedFrom = job.forkedFrom;
  return record;
}
