/**
 * Retention of a MemoryStore's finished jobs: lazy, judged by the `now` of later store operations
 * (the store never reads the wall clock). Completed jobs go `retention.completed` after they
 * finished, but a child is kept (in `held`) while its parent is still active, since the parent
 * may still wait for it, and so is a job whose dependents are not settled yet; dead letters go
 * `retention.dead` after they died.
 */
import type { Duration } from '../../support/duration.js';
import { toMs } from '../../support/duration.js';
import { LoomError } from '../../support/errors.js';
import type { MemoryState, RetentionMs } from './state.js';
import type { StoredJob } from './stored-job.js';

/** The retention of finished jobs, as `MemoryStoreOptions.retention` gives it, in ms. */
export function parseRetention(retention: { completed?: Duration; dead?: Duration } | undefined): RetentionMs {
  return { completed: parseOne('completed', retention?.completed), dead: parseOne('dead', retention?.dead) };
}

function parseOne(kind: string, value: Duration | undefined): number | undefined {
  if (value === undefined) return undefined;
  try {
    return toMs(value);
  } catch (error) {
    throw new LoomError('INVALID_ARGUMENT', `MemoryStore retention.${kind}: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Removes finished jobs and dead letters older than their retention at `now`. The maps are in
 * finishing order, so each sweep stops at the first one still kept: O(removed). (Should the
 * engine's clock step back, a job finished "earlier" behind a later one waits for it.)
 */
export function sweep(state: MemoryState, now: Date): void {
  const { completed, dead } = state.retentionMs;
  if (completed !== undefined) {
    const cutoff = now.getTime() - completed;
    for (const job of state.completed.values()) {
      if (job.record.finishedAt!.getTime() > cutoff) break;
      state.completed.remove(job);
      const { id, parentId } = job.record;
      // A parent still running may wait for this child after sleeping past the retention period;
      // jobs waiting for this one learn of its end only when its dependents are settled.
      if ((parentId !== undefined && state.active.has(parentId)) || state.unsettled.has(id)) state.held.set(id, job);
      else removeCompleted(state, job);
    }
  }
  if (dead !== undefined) {
    const cutoff = now.getTime() - dead;
    for (const [id, entry] of state.dead) {
      if (entry.diedAt.getTime() > cutoff) break;
      state.dead.delete(id);
      state.forget(id);
    }
  }
}

/** `parentId` finished: its children kept past their retention for it go now. */
export function releaseChildren(state: MemoryState, parentId: string): void {
  if (state.held.size === 0) return;
  for (const child of [...state.byParent.get(parentId)]) {
    // Still needed by its dependents: settling them releases it (releaseSettled).
    if (state.unsettled.has(child.record.id) || !state.held.delete(child.record.id)) continue;
    removeCompleted(state, child);
  }
}

/** A job whose dependents were just settled: if retention kept it only for them, it goes now. */
export function releaseSettled(state: MemoryState, id: string): void {
  const job = state.held.get(id);
  if (!job) return;
  const { parentId } = job.record;
  if (parentId !== undefined && state.active.has(parentId)) return;
  state.held.delete(id);
  removeCompleted(state, job);
}

/** Forgets a completed job retention removed: its id, its key, its count and its wait tokens. */
function removeCompleted(state: MemoryState, job: StoredJob): void {
  state.forget(job.record.id);
  state.byParent.remove(job.record.parentId, job);
  state.freeKey(job.record);
  state.counts.add(job.record.queue, 'completed', -1);
}
