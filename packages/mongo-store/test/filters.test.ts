import { describe, expect, it } from '@jest/globals';
import { ObjectId } from 'mongodb';
import { Query } from 'mingo';
import { LoomError } from '@loom/core';
import { parseJobId } from '../src/arguments.js';
import type { JobDocument } from '../src/schema/documents.js';
import { claimFilter, deadLetterFilter, jobListFilter, scheduleCasFilter, unfinishedNotWaitingForFilter } from '../src/schema/filters.js';
import { claimUpdate, newJobDocument } from '../src/schema/updates.js';
import { fencedFilter } from './lease-fence.js';

// Filters are evaluated with mingo (MongoDB query semantics in memory), so these tests check what a
// filter matches, without a database.
const matches = (filter: object, doc: object) => new Query(filter as Record<string, unknown>).test(doc as Record<string, unknown>);

const T0 = new Date('2026-01-01T00:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

function queued(overrides: Partial<JobDocument> = {}): JobDocument {
  return { ...newJobDocument({ name: 'send', queue: 'default', payload: {}, priority: 0, runAt: T0, maxAttempts: 3 }, T0), ...overrides };
}

function running(leaseUntil: Date, token = 'tok'): JobDocument {
  const doc = queued();
  const update = claimUpdate({ owner: 'w1', token, until: leaseUntil }, T0) as { $set: Partial<JobDocument> };
  return { ...doc, ...update.$set, attempt: 1 };
}

const claimReq = { queues: ['default'], names: ['send'], now: T0 };

const expectInvalid = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    expect(LoomError.is(err, 'INVALID_ARGUMENT')).toBe(true);
    return;
  }
  throw new Error('expected INVALID_ARGUMENT');
};

describe('claimFilter', () => {
  it('matches a queued job once its runAt has come, not before', () => {
    expect(matches(claimFilter(claimReq), queued({ runAt: T0, claimAt: T0 }))).toBe(true);
    expect(matches(claimFilter(claimReq), queued({ runAt: at(1), claimAt: at(1) }))).toBe(false);
  });

  it('matches a running job only strictly after its lease expired', () => {
    expect(matches(claimFilter(claimReq), running(T0))).toBe(false); // until == now: still held
    expect(matches(claimFilter(claimReq), running(at(-1)))).toBe(true);
  });

  it('matches a waiting job at its timeout, and never one waiting without a timeout', () => {
    const base = queued();
    expect(matches(claimFilter(claimReq), { ...base, status: 'waiting', runAt: T0, claimAt: T0 })).toBe(true);
    const { claimAt: _dropped, ...noTimeout } = base;
    expect(matches(claimFilter(claimReq), { ...noTimeout, status: 'waiting', runAt: at(-1000) })).toBe(false);
  });

  it('never matches finished jobs', () => {
    for (const status of ['completed', 'dead'] as const) {
      const { claimAt: _dropped, ...finished } = queued();
      expect(matches(claimFilter(claimReq), { ...finished, status })).toBe(false);
      // Even a stray claimAt does not make a finished job claimable.
      expect(matches(claimFilter(claimReq), queued({ status }))).toBe(false);
    }
  });

  it('honours queues, names and excludeNames', () => {
    expect(matches(claimFilter({ ...claimReq, queues: ['other'] }), queued())).toBe(false);
    expect(matches(claimFilter({ ...claimReq, names: ['other'] }), queued())).toBe(false);
    expect(matches(claimFilter({ ...claimReq, names: ['send', 'x'], excludeNames: ['send'] }), queued())).toBe(false);
  });

  it('refuses operator objects smuggled in as queue or job names', () => {
    expectInvalid(() => claimFilter({ ...claimReq, queues: [{ $ne: null } as unknown as string] }));
    expectInvalid(() => claimFilter({ ...claimReq, names: [{ $gt: '' } as unknown as string] }));
    expectInvalid(() => claimFilter({ ...claimReq, now: 'now' as unknown as Date }));
  });
});

describe('fencedFilter', () => {
  const doc = running(at(30_000), 'token-a');

  it('matches only the running job holding that token', () => {
    expect(matches(fencedFilter(doc._id, 'token-a'), doc)).toBe(true);
    expect(matches(fencedFilter(doc._id, 'token-b'), doc)).toBe(false);
    expect(matches(fencedFilter(new ObjectId(), 'token-a'), doc)).toBe(false);
    expect(matches(fencedFilter(doc._id, 'token-a'), { ...doc, status: 'completed' })).toBe(false);
  });

  it('refuses a token that is not a string (a lease forged from JSON)', () => {
    expectInvalid(() => fencedFilter(doc._id, { $ne: null }));
    expectInvalid(() => fencedFilter(doc._id, undefined));
  });

  it('adds first-write-wins and signal conditions', () => {
    const withStep = { ...doc, steps: [{ name: 's1', kind: 'step', status: 'completed', at: T0 }] };
    expect(matches(fencedFilter(doc._id, 'token-a', { absentStep: 's1' }), withStep)).toBe(false);
    expect(matches(fencedFilter(doc._id, 'token-a', { absentStep: 's2' }), withStep)).toBe(true);
    const pending = { ...doc, steps: [{ name: 'nap', kind: 'sleep', status: 'pending', at: T0 }] };
    expect(matches(fencedFilter(doc._id, 'token-a', { pendingStep: 'nap' }), pending)).toBe(true);
    expect(matches(fencedFilter(doc._id, 'token-a', { pendingStep: 's1' }), withStep)).toBe(false);
    const sid = new ObjectId();
    const signalled = { ...doc, signals: [{ name: 'go', data: 1, at: T0, sid }] };
    expect(matches(fencedFilter(doc._id, 'token-a', { absentSignal: 'go' }), signalled)).toBe(false);
    expect(matches(fencedFilter(doc._id, 'token-a', { signalId: sid }), signalled)).toBe(true);
  });
});

describe('signal filters', () => {
  it('store a signal on an unfinished job unless it waits for exactly that signal', () => {
    const job = queued();
    const filter = unfinishedNotWaitingForFilter(job._id, 'go');
    expect(matches(filter, job)).toBe(true);
    expect(matches(filter, { ...job, status: 'waiting', waitingFor: { signal: 'other' } })).toBe(true);
    expect(matches(filter, { ...job, status: 'waiting', waitingFor: { signal: 'go' } })).toBe(false);
    expect(matches(filter, { ...job, status: 'completed' })).toBe(false);
  });
});

describe('list filters', () => {
  const job = queued({ idempotencyKey: 'k1', parentId: 'p1' });

  it('combine fields with AND', () => {
    expect(matches(jobListFilter({ name: 'send', status: ['queued'], idempotencyKey: 'k1', parentId: 'p1' }), job)).toBe(true);
    expect(matches(jobListFilter({ name: 'send', status: ['running'] }), job)).toBe(false);
    expect(matches(jobListFilter({}), job)).toBe(true);
  });

  it('refuse operator objects in place of strings', () => {
    expectInvalid(() => jobListFilter({ idempotencyKey: { $ne: null } as unknown as string }));
    expectInvalid(() => jobListFilter({ parentId: { $gt: '' } as unknown as string }));
    expectInvalid(() => deadLetterFilter({ name: { $regex: '.*' } as unknown as string }));
  });

  it('dead letters: `before` is exclusive', () => {
    const dead = { name: 'send', queue: 'default', diedAt: T0 };
    expect(matches(deadLetterFilter({ before: T0 }), dead)).toBe(false);
    expect(matches(deadLetterFilter({ before: at(1) }), dead)).toBe(true);
  });

  it('schedules: compare-and-set on the last fire time, null included', () => {
    expect(matches(scheduleCasFilter('nightly', null), { _id: 'nightly', lastFireAt: null })).toBe(true);
    expect(matches(scheduleCasFilter('nightly', T0), { _id: 'nightly', lastFireAt: null })).toBe(false);
    expect(matches(scheduleCasFilter('nightly', T0), { _id: 'nightly', lastFireAt: T0 })).toBe(true);
  });
});

describe('parseJobId', () => {
  it('accepts the 24-hex form only; other strings cannot be our ids', () => {
    const id = new ObjectId();
    expect(parseJobId(id.toHexString())?.equals(id)).toBe(true);
    expect(parseJobId('twelve chars')).toBeNull(); // ObjectId.isValid would accept this one
    expect(parseJobId('not-an-id')).toBeNull();
  });

  it('refuses non-strings', () => {
    expectInvalid(() => parseJobId({ $ne: null }));
    expectInvalid(() => parseJobId(42));
  });
});
