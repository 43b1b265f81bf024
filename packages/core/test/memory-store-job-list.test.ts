import { describe, expect, it } from '@jest/globals';
import type { JobRecord } from '../src/store/job-record.js';
import { ActiveJobs } from '../src/store/memory-store/active-jobs.js';
import { JobList } from '../src/store/memory-store/job-list.js';
import { newStoredJob, type StoredJob } from '../src/store/memory-store/stored-job.js';

const at = new Date('2026-01-01T00:00:00.000Z');

/** A stored job of `name`, put in `jobs` as the store's one map of every job does. */
function stored(jobs: Map<string, StoredJob>, id: string, name = 'send'): StoredJob {
  const record: JobRecord = {
    id,
    name,
    queue: 'default',
    payload: null,
    status: 'queued',
    priority: 0,
    runAt: at,
    attempt: 0,
    maxAttempts: 1,
    errors: [],
    steps: [],
    signals: [],
    createdAt: at,
    updatedAt: at,
  };
  const job = newStoredJob(record, jobs.size + 1);
  jobs.set(id, job);
  return job;
}

const ids = (list: Iterable<StoredJob>): string[] => [...list].map((job) => job.record.id);

describe('JobList (the MemoryStore keeps completed jobs in completion order, linked through the jobs)', () => {
  it('keeps the order jobs entered in, through removals at the head, the middle and the tail', () => {
    const jobs = new Map<string, StoredJob>();
    const list = new JobList<StoredJob>();
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((id) => stored(jobs, id));
    for (const job of [a, b, c, d]) list.add(job!);
    expect(ids(list)).toEqual(['a', 'b', 'c', 'd']);
    list.remove(b!);
    list.remove(a!);
    list.remove(d!);
    expect(ids(list)).toEqual(['c']);
    list.add(a!);
    expect(ids(list)).toEqual(['c', 'a']);
    expect([a, b, c, d].map((job) => job!.list === list)).toEqual([true, false, true, false]);
  });

  it('knows which jobs it holds, and refuses to remove a job it does not hold', () => {
    const jobs = new Map<string, StoredJob>();
    const completed = new JobList<StoredJob>();
    const other = new JobList<StoredJob>();
    const a = stored(jobs, 'a');
    const b = stored(jobs, 'b');
    completed.add(a);
    other.add(b);
    expect(a.list).toBe(completed);
    expect(b.list).toBe(other);
    expect(completed.remove(b)).toBe(false);
    expect(ids(other)).toEqual(['b']);
    expect(completed.remove(a)).toBe(true);
    expect(a.list).toBeUndefined();
    expect(completed.remove(a)).toBe(false);
    expect(ids(completed)).toEqual([]);
  });

  it('lets the job just handed out be removed while iterating (retention sweeps from the front)', () => {
    const jobs = new Map<string, StoredJob>();
    const list = new JobList<StoredJob>();
    for (const id of ['a', 'b', 'c']) list.add(stored(jobs, id));
    const seen: string[] = [];
    for (const job of list.values()) {
      seen.push(job.record.id);
      if (job.record.id !== 'c') list.remove(job);
    }
    expect(seen).toEqual(['a', 'b', 'c']);
    expect(ids(list)).toEqual(['c']);
  });
});

describe('ActiveJobs (active jobs, one list per job name)', () => {
  it('finds active jobs by id and by name, and forgets them once they leave', () => {
    const jobs = new Map<string, StoredJob>();
    const active = new ActiveJobs(jobs);
    const completed = new JobList<StoredJob>();
    const s1 = stored(jobs, 's1', 'send');
    const r1 = stored(jobs, 'r1', 'report');
    const s2 = stored(jobs, 's2', 'send');
    for (const job of [s1, r1, s2]) active.add(job);
    expect(ids(active.named('send'))).toEqual(['s1', 's2']);
    expect(ids(active.named('unknown'))).toEqual([]);
    expect(ids(active.values()).sort()).toEqual(['r1', 's1', 's2']);
    expect(active.remove(s1)).toBe(true);
    completed.add(s1);
    expect(active.get('s1')).toBeUndefined();
    expect(active.has('s1')).toBe(false);
    expect(active.remove(s1)).toBe(false);
    expect(s1.list).toBe(completed);
    expect(active.get('s2')).toBe(s2);
    expect(ids(active.named('send'))).toEqual(['s2']);
  });
});
