/**
 * Enqueues of a MemoryStore: new records, deduplicated by idempotency key (against the store, the
 * open transaction and the batch itself), debounced onto the queued job holding their debounce key
 * (`debounce.ts`), or buffered in a transaction until it commits.
 */
import { LoomError } from '../../support/errors.js';
import type { EnqueueResult, JobRecord, NewJob } from '../job-record.js';
import { assertNewJob } from './arguments.js';
import { debounceInTransaction, debouncedUpdate, hasDebounced } from './debounce.js';
import { assignDependencies, checkDependencies, linkDependents } from './dependencies.js';
import { hasDependencies } from '../dependencies.js';
import { MemoryTransaction } from './memory-transaction.js';
import { newRecord } from './new-record.js';
import { copyDate } from './record-copy.js';
import { sweep } from './retention.js';
import type { MemoryState } from './state.js';
import { insert, transition } from './transition.js';

export function enqueue(state: MemoryState, jobs: NewJob[], opts: { now: Date; session?: unknown }): EnqueueResult[] {
  for (const job of jobs) assertNewJob(job, opts.now);
  const debounced = hasDebounced(jobs);
  if (debounced && hasDependencies(jobs)) {
    throw new LoomError(
      'INVALID_ARGUMENT',
      'MemoryStore: a debounced job cannot have dependencies (nor be enqueued with jobs that have some); nothing changed',
    );
  }
  if (opts.session !== undefined) {
    if (debounced) throw debounceInTransaction();
    const tx = MemoryTransaction.of(opts.session, state);
    checkDependencies(state, jobs, tx.enqueued);
    return enqueueInTransaction(state, tx, jobs, opts.now);
  }
  checkDependencies(state, jobs);
  sweep(state, opts.now);
  if (debounced) return jobs.map((job) => enqueueOne(state, job, opts.now));
  const { results, created } = prepareEnqueue(state, jobs, opts.now, undefined);
  store(state, jobs, results, created, opts.now);
  return results;
}

/** Stores the new records of a batch: with their dependencies decided against the store as it is now. */
function store(state: MemoryState, jobs: readonly NewJob[], results: readonly EnqueueResult[], created: ReadonlyMap<number, JobRecord>, now: Date): void {
  assignDependencies(
    state,
    jobs,
    results.map((r) => r.id),
    created,
  );
  insert(state, [...created.values()], now);
  linkDependents(state, created.values());
}

/** One job of a batch with debounced jobs: those update the queued job of their key, if there is one. */
function enqueueOne(state: MemoryState, job: NewJob, now: Date): EnqueueResult {
  const pending = state.debounce.holder(job.debounceKey);
  if (!pending) {
    const { results, created } = prepareEnqueue(state, [job], now, undefined);
    store(state, [job], results, created, now);
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
): { results: EnqueueResult[]; created: Map<number, JobRecord> } {
  const batch = new Map<string, string>();
  const results: EnqueueResult[] = [];
  const created = new Map<number, JobRecord>();
  const at = copyDate(now);
  for (const [i, job] of jobs.entries()) {
    const key = job.idempotencyKey;
    const existing = key === undefined ? undefined : (state.keys.get(key) ?? pending?.get(key) ?? batch.get(key));
    if (existing !== undefined) {
      results.push({ id: existing, deduplicated: true });
      continue;
    }
    const record = newRecord(job, now, at);
    if (key !== undefined) batch.set(key, record.id);
    results.push({ id: record.id, deduplicated: false });
    created.set(i, record);
  }
  return { results, created };
}

function enqueueInTransaction(state: MemoryState, tx: MemoryTransaction, jobs: NewJob[], now: Date): EnqueueResult[] {
  const { results, created } = prepareEnqueue(state, jobs, now, tx.keys);
  for (const record of created.values()) {
    if (record.idempotencyKey !== undefined) tx.keys.set(record.idempotencyKey, record.id);
    tx.enqueued.add(record.id);
  }
  tx.buffer({
    check: () => {
      for (const record of created.values()) {
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
    apply: () => store(state, jobs, results, created, now),
  });
  return results;
}
