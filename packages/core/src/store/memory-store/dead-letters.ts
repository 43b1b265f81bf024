/**
 * The dead letters of a MemoryStore: listing, replaying (a dead job made `queued` again, its
 * steps and errors kept, its attempts from zero) and purging. A replay is refused while another
 * job holds the dead job's idempotency key.
 */
import { LoomError } from '../../support/errors.js';
import type { DeadLetter } from '../job-record.js';
import type { TransitionName } from '../lifecycle.js';
import type { DeadLetterReplayReport } from '../operations.js';
import type { DeadLetterFilter } from '../store.js';
import { assertDate } from './arguments.js';
import { matchesDeadLetterFilter, takeLimit } from './filters.js';
import { copyDate, copyRecord } from './record-copy.js';
import { sweep } from './retention.js';
import type { DeadEntry, MemoryState } from './state.js';
import { transition } from './transition.js';

/** `replayDeadLetters` reports progress after this many letters. */
const REPLAY_PROGRESS_EVERY = 500;

export function listDeadLetters(state: MemoryState, filter: DeadLetterFilter): DeadLetter[] {
  return matching(state, filter).map((entry) => ({
    id: entry.job.record.id,
    job: copyRecord(entry.job.record),
    reason: entry.reason,
    diedAt: copyDate(entry.diedAt),
  }));
}

/** `retryJob` of a dead job is a replay made as that transition (the table allows it from `dead` too). */
export function replayDeadLetter(state: MemoryState, id: string, now: Date, name: TransitionName = 'replay'): string | null {
  assertDate(now, 'replayDeadLetter now');
  return replay(state, id, now, name);
}

export function replayDeadLetters(
  state: MemoryState,
  filter: DeadLetterFilter,
  req: { now: Date; onProgress?: (handled: number) => void },
): DeadLetterReplayReport {
  assertDate(req.now, 'replayDeadLetters now');
  const report: DeadLetterReplayReport = { replayed: 0, skipped: [] };
  const letters = matching(state, filter);
  letters.forEach((entry, i) => {
    const id = entry.job.record.id;
    try {
      replay(state, id, req.now);
      report.replayed += 1;
    } catch (error) {
      if (!LoomError.is(error, 'INVALID_ARGUMENT')) throw error;
      report.skipped.push({ id, reason: error.message });
    }
    if ((i + 1) % REPLAY_PROGRESS_EVERY === 0) req.onProgress?.(i + 1);
  });
  if (letters.length % REPLAY_PROGRESS_EVERY !== 0) req.onProgress?.(letters.length);
  return report;
}

export function purgeDeadLetters(state: MemoryState, filter: DeadLetterFilter): number {
  const doomed = matching(state, filter);
  for (const entry of doomed) {
    state.dead.delete(entry.job.record.id);
    state.forget(entry.job.record.id);
  }
  return doomed.length;
}

function replay(state: MemoryState, id: string, now: Date, name: TransitionName = 'replay'): string | null {
  sweep(state, now);
  const entry = state.dead.get(id);
  if (!entry) return null;
  const { record } = entry.job;
  const key = record.idempotencyKey;
  const holder = key === undefined ? undefined : state.keys.get(key);
  if (holder !== undefined) {
    throw new LoomError(
      'INVALID_ARGUMENT',
      `Dead letter ${id} cannot be replayed: its idempotency key ${JSON.stringify(key)} is now held by job ${holder}; ` +
        'nothing changed. Let that job finish, or purge this dead letter if it is obsolete',
    );
  }
  transition(state, entry.job, name, now, (r) => {
    delete r.deadReason;
  });
  return id;
}

function matching(state: MemoryState, filter: DeadLetterFilter): DeadEntry[] {
  const matches: DeadEntry[] = [];
  for (const entry of state.dead.values()) if (matchesDeadLetterFilter({ job: entry.job.record, diedAt: entry.diedAt }, filter)) matches.push(entry);
  // Newest first; the map is in death order, so reversing first keeps ties newest-first too.
  matches.reverse().sort((a, b) => b.diedAt.getTime() - a.diedAt.getTime());
  return takeLimit(matches, filter.limit);
}
