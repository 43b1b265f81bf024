/** The batch operations of a MemoryStore: create one (members and all), read its counts and failed members. See `batch-table.ts`. */
import { randomUUID } from 'node:crypto';
import { BATCH_CALLBACKS, type BatchRecord, type CreatedBatch, type NewBatch } from '../batch.js';
import type { StoredBatch } from './batch-table.js';
import { assertDate, assertNewJob, assertString } from './arguments.js';
import { clonePlain } from './clone.js';
import { newRecord } from './new-record.js';
import { copyDate } from './record-copy.js';
import type { MemoryState } from './state.js';
import { insert } from './transition.js';
import { LoomError } from '../../support/errors.js';

export function createBatch(state: MemoryState, batch: NewBatch, now: Date): CreatedBatch {
  assertDate(now, 'createBatch now');
  if (typeof batch !== 'object' || batch === null || !Array.isArray(batch.jobs)) {
    throw new LoomError('INVALID_ARGUMENT', 'MemoryStore: createBatch needs { jobs: NewJob[], callbacks }; nothing changed');
  }
  for (const job of batch.jobs) {
    assertNewJob(job, now);
    if (job.idempotencyKey !== undefined || job.debounceKey !== undefined) {
      throw new LoomError('INVALID_ARGUMENT', `MemoryStore: batch member "${job.name}" has an idempotency or debounce key; nothing changed`);
    }
  }
  for (const on of BATCH_CALLBACKS) {
    const callback = batch.callbacks?.[on];
    if (callback !== undefined) assertNewJob(callback, now);
  }
  const id = randomUUID();
  const records = batch.jobs.map((job) => {
    const record = newRecord(job, now);
    record.batchId = id;
    return record;
  });
  const total = records.length;
  const stored: StoredBatch = {
    record: { id, total, completed: 0, dead: 0, cancelled: 0, pending: total, createdAt: copyDate(now) },
    failed: new Set(),
    callbacks: clonePlain(batch.callbacks ?? {}),
  };
  state.batches.add(stored);
  insert(state, records, now);
  if (total === 0) insert(state, state.batches.finish(stored, now, state.keys), now);
  return { id, jobIds: records.map((r) => r.id) };
}

export function getBatch(state: MemoryState, id: string): BatchRecord | null {
  assertString(id, 'getBatch id');
  const batch = state.batches.get(id);
  return batch ? clonePlain(batch.record) : null;
}

export function batchFailures(state: MemoryState, id: string): string[] {
  assertString(id, 'batchFailures id');
  return [...(state.batches.get(id)?.failed ?? [])];
}
