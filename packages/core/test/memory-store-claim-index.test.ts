import { describe, expect, it } from '@jest/globals';
import type { JobRecord } from '../src/store/job-record.js';
import { ClaimIndex } from '../src/store/memory-store/claim-index.js';
import { newStoredJob, type StoredJob } from '../src/store/memory-store/stored-job.js';

const REFERENCE = Date.parse('2026-01-01T00:00:00.000Z');

function storedJob(seq: number, overrides: Partial<JobRecord> = {}): StoredJob {
  const record: JobRecord = {
    id: `job-${seq}`,
    name: 'send',
    queue: 'default',
    payload: null,
    status: 'queued',
    priority: 0,
    runAt: new Date(REFERENCE),
    attempt: 0,
    maxAttempts: 3,
    errors: [],
    steps: [],
    signals: [],
    createdAt: new Date(REFERENCE),
    updatedAt: new Date(REFERENCE),
    ...overrides,
  };
  return newStoredJob(record, seq);
}

const take = (index: ClaimIndex, now: number, limit = 1) => index.take({ queues: ['default'], names: ['send'], limit, now });

describe('ClaimIndex (MemoryStore)', () => {
  it('stays small while jobs are claimed and finish within their lease (stale lease timers are compacted)', () => {
    const index = new ClaimIndex();
    const now = REFERENCE;
    for (let i = 0; i < 10_000; i++) {
      const job = storedJob(i);
      index.update(job, now);
      const [claimed] = take(index, now);
      expect(claimed).toBe(job);
      // claimed: running with a 30 s lease, indexed for its lease expiry
      job.record.status = 'running';
      job.record.lease = { owner: 'w', token: `t${i}`, until: new Date(now + 30_000) };
      job.version += 1;
      index.update(job, now);
      // finished well before the lease expires
      job.record.status = 'completed';
      delete job.record.lease;
      job.version += 1;
      index.update(job, now);
    }
    expect(index.size).toBeLessThanOrEqual(64);
  });

  it('still finds a running job whose lease expired among many stale entries', () => {
    const index = new ClaimIndex();
    const stuck = storedJob(0, { status: 'running', lease: { owner: 'w', token: 't', until: new Date(REFERENCE + 1_000) } });
    index.update(stuck, REFERENCE);
    for (let i = 1; i < 1_000; i++) {
      const job = storedJob(i, { status: 'running', lease: { owner: 'w', token: `t${i}`, until: new Date(REFERENCE + 500) } });
      index.update(job, REFERENCE);
      job.record.status = 'completed';
      job.version += 1;
      index.update(job, REFERENCE);
    }
    expect(take(index, REFERENCE + 1_000)).toEqual([]);
    expect(take(index, REFERENCE + 1_001, 10)).toEqual([stuck]);
  });
});
