import { describe, expect, it } from '@jest/globals';
import { ObjectId } from 'mongodb';
import { Query } from 'mingo';
import { holdsLease, isFenced, LIFECYCLE, refusedAfterCancelRequest, type TransitionName } from '@loom/core';
import { fencedFilter, fencedManyFilter } from '../src/schema/filters.js';

// fencedFilter states the lease rule of LIFECYCLE as a MongoDB filter, row by row: these check it
// against the table and against holdsLease on the same documents (mingo evaluates the filter).
const matches = (filter: object, doc: object) => new Query(filter as Record<string, unknown>).test(doc as Record<string, unknown>);

const id = new ObjectId();
const fencedRows = (Object.keys(LIFECYCLE) as TransitionName[]).filter(isFenced);
const job = (status: string, token: string, cancelRequested = false) => ({
  _id: id,
  status,
  lease: { owner: 'w', token, until: new Date(0) },
  ...(cancelRequested ? { cancelRequestedAt: new Date(0) } : {}),
});

describe('fencedFilter, from the lifecycle table', () => {
  it('covers the fenced rows, each starting from running', () => {
    expect(fencedRows).toEqual(expect.arrayContaining(['complete', 'extendLease', 'completeCancel', 'deadLetter']));
    for (const name of fencedRows) expect(LIFECYCLE[name].from).toEqual(['running']);
  });

  it('matches exactly where holdsLease holds, for every fenced row without a requested cancel', () => {
    for (const name of fencedRows) {
      for (const status of ['queued', 'running', 'waiting', 'completed']) {
        for (const token of ['mine', 'taken-over']) {
          const doc = job(status, token);
          expect([name, status, token, matches(fencedFilter(name, id, 'mine'), doc)]).toEqual([
            name,
            status,
            token,
            holdsLease(doc as never, { jobId: id.toHexString(), token: 'mine' }),
          ]);
        }
      }
    }
  });

  it('refuses a requested cancel exactly where the row says so', () => {
    const cancelled = job('running', 'mine', true);
    for (const name of fencedRows) expect([name, matches(fencedFilter(name, id, 'mine'), cancelled)]).toEqual([name, !refusedAfterCancelRequest(name)]);
    expect(matches(fencedFilter('complete', id, 'mine'), cancelled)).toBe(false);
    expect(matches(fencedFilter('completeCancel', id, 'mine'), cancelled)).toBe(true);
    expect(matches(fencedFilter('extendLease', id, 'mine', { noCancelRequested: true }), cancelled)).toBe(false);
    expect(matches(fencedFilter('holds', id, 'mine'), cancelled)).toBe(true);
  });

  it('keeps the shape and field order of the fence', () => {
    expect(fencedFilter('complete', id, 'mine')).toEqual({ _id: id, 'lease.token': { $eq: 'mine' }, status: 'running', cancelRequestedAt: { $exists: false } });
    expect(Object.keys(fencedFilter('extendLease', id, 'mine', { noCancelRequested: true, unexpiredAt: new Date(0) }))).toEqual([
      '_id',
      'lease.token',
      'status',
      'cancelRequestedAt',
      'lease.until',
    ]);
    expect(fencedManyFilter('complete', [id], ['mine'])).toEqual({
      _id: { $in: [id] },
      'lease.token': { $in: ['mine'] },
      status: 'running',
      cancelRequestedAt: { $exists: false },
    });
  });

  it('refuses a transition no lease fences', () => {
    expect(() => fencedFilter('claim', id, 'mine')).toThrow(/not a fenced transition/);
    expect(() => fencedFilter('cancel', id, 'mine')).toThrow(/not a fenced transition/);
  });
});
