import { describe, expect, it } from '@jest/globals';
import type { JobRecord } from '@loom/core';
import { copyRecord } from '../src/store/memory-store/record-copy.js';

const at = (ms: number): Date => new Date(Date.UTC(2026, 0, 1) + ms);

/** Every field of JobRecord set: adding a field to JobRecord makes this fail to compile until it is set here too. */
const full: Required<JobRecord> = {
  id: 'j1',
  name: 'send',
  queue: 'default',
  payload: { to: 'a@b.c', when: at(1), list: [{ n: 1 }] },
  status: 'running',
  priority: 3,
  runAt: at(2),
  attempt: 2,
  priorAttempts: 1,
  maxAttempts: 5,
  idempotencyKey: 'k',
  lease: { owner: 'w', token: 't', until: at(3) },
  errors: [{ attempt: 1, at: at(4), name: 'Error', message: 'boom' }],
  steps: [{ name: 's', kind: 'step', status: 'completed', result: { r: [1] }, at: at(5) }],
  signals: [{ name: 'go', data: { d: 1 }, at: at(6) }],
  waitingFor: { signal: 'go', jobs: ['j2'] },
  result: { ok: [true] },
  progress: { done: 1 },
  parentId: 'p',
  scheduledFor: at(7),
  dependsOn: ['dep-1'],
  onDependencyFailure: 'cancel',
  dependents: ['dependent-1'],
  trace: { traceparent: '00-0123456789abcdef0123456789abcdef-0123456789abcdef-01' },
  createdAt: at(8),
  updatedAt: at(9),
  startedAt: at(10),
  sleepUntil: at(15),
  logs: [{ at: at(12), level: 'info', msg: 'hi', attempt: 1 }],
  finishedAt: at(11),
  deadReason: 'r',
  cancelRequestedAt: at(12),
  cancelReason: 'c',
  rateLimitKey: 'rl',
  groupKey: 'g',
  debounceKey: 'd',
  batchId: 'b',
  batchCallback: { batchId: 'b0', on: 'complete' },
  forkedFrom: 'f',
  offloadedPayload: { fileId: 'f1', size: 300_000 },
  offloadedResult: { fileId: 'f2', size: 400_000 },
};

/** Every object reachable from `v` (Dates, arrays, plain objects). */
function objectsIn(v: unknown, into: Set<object> = new Set()): Set<object> {
  if (typeof v !== 'object' || v === null) return into;
  into.add(v);
  if (!(v instanceof Date)) for (const child of Object.values(v)) objectsIn(child, into);
  return into;
}

describe('copyRecord (the MemoryStore hands out copies of its records field by field)', () => {
  it('copies every field of a record, sharing no object with it', () => {
    const copy = copyRecord(full);
    expect(copy).toStrictEqual(full);
    expect(Object.keys(copy).sort()).toEqual(Object.keys(full).sort());
    const stored = objectsIn(full);
    for (const object of objectsIn(copy)) expect(stored.has(object)).toBe(false);
  });

  it('leaves out fields the record does not hold or holds as undefined', () => {
    const { lease: _lease, result: _result, ...rest } = full;
    const copy = copyRecord({ ...rest, lease: undefined, payload: { keep: 1, gone: undefined } });
    expect(Object.keys(copy)).not.toContain('lease');
    expect(Object.keys(copy)).not.toContain('result');
    expect(copy.payload).toStrictEqual({ keep: 1 });
  });
});
