import { describe, expect, it } from '@jest/globals';
import { update as mingoUpdate } from 'mingo';
import { BSON } from 'mongodb';
import { LoomError, type ErrorRecord, type StepRecord } from '@loom/core';
import type { JobDocument } from '../src/schema/documents.js';
import {
  claimUpdate,
  completeUpdate,
  deadLetterDocument,
  MAX_ERROR_HISTORY,
  newJobDocument,
  pendingStepArrayFilters,
  replayedJobDocument,
  requeueUpdate,
  retryUpdate,
  touchUpdate,
  waitUpdate,
  withStep,
} from '../src/schema/updates.js';

// Updates are applied with mingo (MongoDB update semantics in memory): the tests check the
// resulting document, in particular the `claimAt` invariant every claim relies on.
function apply(doc: JobDocument, update: object, arrayFilters?: object[]): JobDocument {
  const copy = BSON.deserialize(BSON.serialize(doc)) as JobDocument; // a deep copy keeping ObjectIds
  mingoUpdate(copy as unknown as Record<string, unknown>, update as never, arrayFilters as never);
  return copy;
}

const T0 = new Date('2026-01-01T00:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const error = (attempt: number): ErrorRecord => ({ attempt, at: T0, name: 'Error', message: `boom ${attempt}` });
const fresh = () => newJobDocument({ name: 'send', queue: 'q', payload: { $where: 'x', 'a.b': 1 }, priority: 2, runAt: at(5), maxAttempts: 3 }, T0);
const claimed = () => apply(fresh(), claimUpdate({ owner: 'w', token: 't', until: at(30_000) }, at(10)));

describe('newJobDocument', () => {
  it('is queued, claimable at runAt, and keeps the payload opaque', () => {
    const doc = fresh();
    expect(doc).toMatchObject({ status: 'queued', claimAt: at(5), attempt: 0, errors: [], steps: [], signals: [] });
    expect(doc.payload).toEqual({ $where: 'x', 'a.b': 1 });
  });

  it('refuses empty or non-string idempotency keys', () => {
    const base = { name: 'send', queue: 'q', payload: {}, priority: 0, runAt: T0, maxAttempts: 1 };
    for (const idempotencyKey of ['', { $ne: null }]) {
      expect(() => newJobDocument({ ...base, idempotencyKey } as never, T0)).toThrow(
        expect.objectContaining({ code: 'INVALID_IDEMPOTENCY_KEY' }) as unknown as Error,
      );
    }
  });

  it('refuses malformed fields with INVALID_ARGUMENT', () => {
    const base = { name: 'send', queue: 'q', payload: {}, priority: 0, runAt: T0, maxAttempts: 1 };
    for (const bad of [{ runAt: 'soon' }, { priority: NaN }, { maxAttempts: 1.5 }, { queue: 7 }]) {
      let caught: unknown;
      try {
        newJobDocument({ ...base, ...bad } as never, T0);
      } catch (err) {
        caught = err;
      }
      expect(LoomError.is(caught, 'INVALID_ARGUMENT')).toBe(true);
    }
  });
});

describe('transitions keep claimAt right', () => {
  it('claim: leased, one more attempt, reclaimable 1 ms after the lease, startedAt kept', () => {
    const doc = claimed();
    expect(doc).toMatchObject({ status: 'running', attempt: 1, claimAt: at(30_001), startedAt: at(10) });
    const again = apply(doc, claimUpdate({ owner: 'w2', token: 't2', until: at(90_000) }, at(40_000)));
    expect(again).toMatchObject({ attempt: 2, startedAt: at(10), lease: { owner: 'w2', token: 't2' } });
  });

  it('complete: no longer claimable, lease gone, result kept (also null)', () => {
    const doc = apply(claimed(), completeUpdate(null, at(20)));
    expect(doc.status).toBe('completed');
    expect(doc.claimAt).toBeUndefined();
    expect(doc.lease).toBeUndefined();
    expect(doc.result).toBeNull();
    expect('result' in apply(claimed(), completeUpdate(undefined, at(20)))).toBe(false);
  });

  it('retry: claimable at the backoff time, error history bounded to the newest', () => {
    let doc = claimed();
    for (let i = 1; i <= MAX_ERROR_HISTORY + 3; i++) doc = apply(doc, retryUpdate(at(1000), error(i), at(20)));
    expect(doc).toMatchObject({ status: 'queued', claimAt: at(1000), runAt: at(1000) });
    expect(doc.errors).toHaveLength(MAX_ERROR_HISTORY);
    expect(doc.errors[0].attempt).toBe(4);
    expect(doc.errors.at(-1)!.attempt).toBe(MAX_ERROR_HISTORY + 3);
  });

  it('release and sleep give the attempt back', () => {
    const doc = apply(claimed(), requeueUpdate(at(99), at(20)));
    expect(doc).toMatchObject({ status: 'queued', attempt: 0, runAt: at(99), claimAt: at(99) });
  });

  it('wait: claimable at the timeout, or never without one', () => {
    const timed = apply(claimed(), waitUpdate({ signal: 'go' }, at(500), at(20)));
    expect(timed).toMatchObject({ status: 'waiting', runAt: at(500), claimAt: at(500), attempt: 0, waitingFor: { signal: 'go' } });
    const open = apply(claimed(), waitUpdate({ jobs: ['a'] }, undefined, at(20)));
    expect(open.claimAt).toBeUndefined();
  });
});

describe('withStep', () => {
  const pending: StepRecord = { name: 'nap', kind: 'sleep', status: 'pending', wakeAt: at(100), at: T0 };
  const done: StepRecord = { name: 'nap', kind: 'sleep', status: 'completed', at: at(100) };

  it('appends a new step alongside the transition', () => {
    const doc = apply(claimed(), withStep(requeueUpdate(at(100), at(20)), pending, 'append'));
    expect(doc.steps).toEqual([pending]);
    expect(doc.status).toBe('queued');
  });

  it('replaces the pending step of that name in place', () => {
    const other: StepRecord = { name: 'other', kind: 'step', status: 'completed', result: 1, at: T0 };
    const doc = { ...claimed(), steps: [other, pending] };
    const out = apply(doc, withStep(touchUpdate(at(200)), done, 'replace-pending'), pendingStepArrayFilters('nap'));
    expect(out.steps).toEqual([other, done]);
  });
});

describe('dead letters', () => {
  it('keep the job as it died, keyed by its id, with the lease token that moved it', () => {
    const job = claimed();
    const dead = deadLetterDocument(job, { reason: 'boom 3', error: error(3), now: at(50) });
    expect(dead._id.equals(job._id)).toBe(true);
    expect(dead).toMatchObject({ reason: 'boom 3', diedAt: at(50), leaseToken: 't', name: 'send', queue: 'q' });
    expect(dead.job).toMatchObject({ status: 'dead', deadReason: 'boom 3', finishedAt: at(50), errors: [error(3)] });
    expect('lease' in dead.job || 'claimAt' in dead.job).toBe(false);
  });

  it('replay as the same job, queued now, attempts reset, steps kept', () => {
    const step: StepRecord = { name: 's', kind: 'step', status: 'completed', result: 1, at: T0 };
    const dead = deadLetterDocument({ ...claimed(), steps: [step] }, { reason: 'r', now: at(50) });
    const job = replayedJobDocument(dead, at(60));
    expect(job._id.equals(dead._id)).toBe(true);
    expect(job).toMatchObject({ status: 'queued', attempt: 0, runAt: at(60), claimAt: at(60), steps: [step] });
    expect(job.deadReason).toBeUndefined();
    expect(job.finishedAt).toBeUndefined();
  });
});
