import { describe, expect, it } from '@jest/globals';
import { InvalidTransitionError, LIFECYCLE, LoomError, type JobRecord, type JobStatus, type TransitionName } from '@loom/core';
import { QueuedListeners } from '../src/store/memory-store/queued-listeners.js';
import { MemoryState } from '../src/store/memory-store/state.js';
import { insert, transition } from '../src/store/memory-store/transition.js';

// The MemoryStore's one transition function refuses what the lifecycle table does not allow. The
// store never asks for such a transition (the conformance suite checks every allowed one), so this
// calls it directly: a refusal must be an INVALID_TRANSITION error that changed nothing.

const REFERENCE = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number): Date => new Date(REFERENCE + ms);

function queuedJob(state: MemoryState): JobRecord {
  const record: JobRecord = {
    id: 'job-1',
    name: 'send',
    queue: 'default',
    payload: null,
    status: 'queued',
    priority: 0,
    runAt: at(0),
    attempt: 0,
    maxAttempts: 3,
    errors: [],
    steps: [],
    signals: [],
    createdAt: at(0),
    updatedAt: at(0),
  };
  insert(state, [record], at(0));
  return record;
}

const newState = (): MemoryState => new MemoryState({}, new QueuedListeners(() => {}));

describe('MemoryStore transition', () => {
  const refusedFromQueued = (Object.keys(LIFECYCLE) as TransitionName[]).filter(
    (name) => name !== 'enqueue' && !LIFECYCLE[name].from.includes('queued' as JobStatus),
  );

  it.each(refusedFromQueued)('refuses %s from queued with INVALID_TRANSITION, changing nothing', (name) => {
    const state = newState();
    const record = queuedJob(state);
    const job = state.active.get(record.id)!;
    const before = { ...record, version: job.version };
    let changed = false;
    const error = (() => {
      try {
        transition(state, job, name, at(10), () => {
          changed = true;
        });
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(LoomError.is(error, 'INVALID_TRANSITION')).toBe(true);
    expect(error).toBeInstanceOf(InvalidTransitionError);
    expect((error as Error).message).toContain(`"${name}" from status "queued"`);
    expect(changed).toBe(false);
    expect({ ...record, version: job.version }).toEqual(before);
    expect(state.active.get(record.id)).toBe(job);
    expect(state.counts.snapshot()).toEqual({ default: { queued: 1 } });
  });

  it('applies an allowed row: claim takes the job to running with the next attempt', () => {
    const state = newState();
    const record = queuedJob(state);
    const job = state.active.get(record.id)!;
    transition(state, job, 'claim', at(10), (r) => {
      r.lease = { owner: 'w', token: 't', until: at(1_000) };
    });
    expect(record).toMatchObject({ status: 'running', attempt: 1, updatedAt: at(10) });
    expect(state.counts.snapshot()).toEqual({ default: { running: 1 } });
  });
});
