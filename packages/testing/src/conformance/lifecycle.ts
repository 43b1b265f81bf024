/// <reference types="jest" />
import {
  JOB_STATUSES,
  LIFECYCLE,
  LoomError,
  attemptAfter,
  isFenced,
  refusedAfterCancelRequest,
  statusAfter,
  type JobRecord,
  type JobStatus,
  type JobStore,
  type LeaseRef,
  type NewJob,
  type TransitionName,
} from '@loom/core';
import { LEASE_MS, at, claimOne, enqueueOne, mustGet, type ConformanceContext } from './harness.js';

/**
 * The transition cases generated from the lifecycle table (`LIFECYCLE` in `@loom/core`). For every
 * row, one test puts a job in each of the six statuses (each job under its own name, so claims
 * never cross), applies the row's operation to all of them, and checks what the row says:
 * from a status in `from`, the job ends in the row's `to` with the attempt and lease the row
 * gives it; from any other status, nothing changes (a fenced row rejects with `LEASE_LOST`). A
 * fenced row is also tried with a stale token, and after a cancel was requested.
 *
 * A new row of the table without a driver here fails the suite: a new state or transition is one
 * row plus its driver, and the cases come from the row.
 */

/** A job put in a status by {@link jobIn}: its id, the lease it was last claimed with, and the status. */
interface Subject {
  id: string;
  status: JobStatus;
  /** The lease the job was claimed with (the current one when it is running; a stale one otherwise). */
  lease: LeaseRef;
  name: string;
}

/** What one row's operation did to one subject. */
type Applied = 'applied' | 'refused';

/** How to perform one row's operation on a subject, and how its refusal shows. */
interface Driver {
  /** When the operation runs (default `OP_AT`): a row whose guard needs time to pass runs later. */
  now?: Date;
  /** Rows that are the same store operation: a status in any of their `from` is not a refusal of this row. */
  sameOperationAs?: TransitionName[];
  /** What the jobs are enqueued with, beyond their name (e.g. a debounce key). */
  job?(name: string): Partial<NewJob>;
  /**
   * Puts the subject in `status` its own way instead of {@link jobIn} (e.g. waiting for dependencies
   * rather than for a signal); undefined: {@link jobIn} does.
   */
  setUp?(store: JobStore, status: JobStatus, name: string): Promise<Subject | undefined>;
  /** Whether the subject must be prepared first (e.g. a stored signal to consume); runs before `apply`. */
  prepare?(store: JobStore, subject: Subject): Promise<void>;
  /** Performs the operation. Fenced rows reject with `LEASE_LOST` to refuse; others say `refused`. */
  apply(store: JobStore, subject: Subject, now: Date): Promise<Applied>;
}

/** When the jobs are set up (claims, waits, finishes at or before it). */
const SETUP_AT = at(0);
/** When a row's operation runs unless its driver says otherwise: every lease still held. */
const OP_AT = at(100);
/** After every lease of the setup ran out. */
const LEASES_EXPIRED_AT = at(LEASE_MS + 1_000);
/** The wait timeout of the `waiting` subject. */
const WAIT_TIMEOUT_AT = at(60_000);

const nameOf = (row: TransitionName, status: JobStatus): string => `lc-${row}-${status}`;

/** A made-up lease for a job: a token no claim handed out. */
const strangerLease = (jobId: string): LeaseRef => ({ jobId, token: 'not-a-token-of-this-store' });

/** Enqueues a job named `name` and brings it to `status` through the store's own operations. */
async function jobIn(store: JobStore, status: JobStatus, name: string, overrides: Partial<NewJob> = {}): Promise<Subject> {
  const id = await enqueueOne(store, { ...overrides, name }, SETUP_AT);
  if (status === 'queued') return { id, status, name, lease: strangerLease(id) };
  if (status === 'cancelled') {
    await store.cancelJob(id, { now: SETUP_AT });
    return { id, status, name, lease: strangerLease(id) };
  }
  const { lease } = await claimOne(store, { names: [name], now: SETUP_AT });
  switch (status) {
    case 'running':
      break;
    case 'waiting':
      await store.wait(lease, { for: { signal: 'go' }, timeoutAt: WAIT_TIMEOUT_AT, now: SETUP_AT });
      break;
    case 'completed':
      await store.complete(lease, { now: SETUP_AT });
      break;
    case 'dead':
      await store.deadLetter(lease, { reason: 'set up dead', now: SETUP_AT });
      break;
  }
  return { id, status, name, lease };
}

/** Runs a fenced write: `applied`, or `refused` when it rejected with `LEASE_LOST` (any other error fails the test). */
async function fenced(write: Promise<unknown>): Promise<Applied> {
  try {
    await write;
    return 'applied';
  } catch (err) {
    if (LoomError.is(err, 'LEASE_LOST')) return 'refused';
    throw err;
  }
}

/** Whether `store.claim` at `now` handed out the subject's job. */
async function claimed(store: JobStore, subject: Subject, now: Date): Promise<Applied> {
  const jobs = await store.claim({
    owner: 'worker-b',
    queues: ['default'],
    names: [subject.name],
    limit: 1,
    leaseUntil: new Date(now.getTime() + LEASE_MS),
    now,
  });
  return jobs.some((job) => job.id === subject.id) ? 'applied' : 'refused';
}

const CLAIMS: TransitionName[] = ['claim', 'reclaim', 'claimAtTimeout'];
const CANCELS: TransitionName[] = ['cancel', 'requestCancel', 'cancelExpired'];
const SIGNALS: TransitionName[] = ['signal', 'signalWake'];
const SETTLES: TransitionName[] = ['dependenciesMet', 'dependencyFailed', 'dependencyCancelled'];

/**
 * The driver of a `settleDependents` row: the `waiting` subject depends on a job that is then
 * completed (`ending: 'complete'`), dead-lettered or cancelled, with `policy`; the others depend on
 * nothing, so settling changes none of them.
 */
function settleDriver(ending: 'complete' | 'deadLetter' | 'cancel', policy: 'fail' | 'cancel' | 'run'): Driver {
  const dependencyOf = new Map<string, { id: string; lease: LeaseRef }>();
  return {
    sameOperationAs: SETTLES,
    async setUp(store, status, name) {
      if (status !== 'waiting') return undefined;
      const dep = await jobIn(store, 'running', `${name}-dependency`);
      const [result] = await store.enqueue(
        [{ name, queue: 'default', payload: {}, priority: 0, runAt: SETUP_AT, maxAttempts: 3, dependsOn: [dep.id], onDependencyFailure: policy }],
        { now: SETUP_AT },
      );
      dependencyOf.set(result.id, { id: dep.id, lease: dep.lease });
      return { id: result.id, status, name, lease: strangerLease(result.id) };
    },
    async apply(store, s, now) {
      const before = await mustGet(store, s.id);
      const dep = dependencyOf.get(s.id);
      if (dep !== undefined) {
        if (ending === 'complete') await store.complete(dep.lease, { result: 'dep', now });
        else if (ending === 'deadLetter') await store.deadLetter(dep.lease, { reason: 'dependency died', now });
        else {
          await store.cancelJob(dep.id, { now });
          await store.completeCancel(dep.lease, now);
        }
      }
      await store.settleDependents(dep === undefined ? { now } : { now, jobIds: [dep.id] });
      const after = await store.getJob(s.id);
      return after?.status !== before.status ? 'applied' : 'refused';
    },
  };
}

/** How each row of the table is driven. Every row must have one. */
const DRIVERS: { [name in TransitionName]: Driver | 'own-suite' } = {
  // enqueue has no `from`: it is the enqueue suite's subject (enqueue.ts), which checks it makes a queued job of attempt 0.
  enqueue: 'own-suite',
  // Likewise enqueueWaiting, an enqueue with dependencies: the dependencies suite's (dependencies.ts).
  enqueueWaiting: 'own-suite',
  debounce: {
    job: (name) => ({ debounceKey: `k-${name}` }),
    async apply(store, subject, now) {
      const [result] = await store.enqueue(
        [{ name: subject.name, queue: 'default', payload: { v: 2 }, priority: 0, runAt: now, maxAttempts: 3, debounceKey: `k-${subject.name}` }],
        { now },
      );
      return result.id === subject.id ? 'applied' : 'refused';
    },
  },
  claim: { sameOperationAs: CLAIMS, apply: claimed },
  reclaim: { now: LEASES_EXPIRED_AT, sameOperationAs: CLAIMS, apply: claimed },
  claimAtTimeout: { now: WAIT_TIMEOUT_AT, sameOperationAs: CLAIMS, apply: claimed },
  extendLease: { apply: (store, s, now) => fenced(store.extendLease(s.lease, new Date(now.getTime() + LEASE_MS), now)) },
  recordStep: { apply: (store, s, now) => fenced(store.recordStep(s.lease, { name: 'lc-step', kind: 'step', status: 'completed', result: 1, at: now }, now)) },
  progress: { apply: (store, s, now) => fenced(store.progress(s.lease, { percent: 50 }, now)) },
  createWaitToken: {
    apply: (store, s, now) => fenced(store.createWaitToken(s.lease, { id: `lc-token-${s.id}`, jobId: s.id, status: 'pending', createdAt: now }, now)),
  },
  appendLogs: { apply: (store, s, now) => fenced(store.appendLogs(s.lease, [{ at: now, level: 'info', msg: 'line', attempt: 1 }], now)) },
  consumeSignal: {
    async prepare(store, s) {
      await store.signal(s.id, { name: 'lc-signal', data: 1, now: SETUP_AT });
    },
    apply: (store, s, now) => fenced(store.consumeSignal(s.lease, { signal: 'lc-signal', stepName: 'lc-got', now })),
  },
  complete: { apply: (store, s, now) => fenced(store.complete(s.lease, { result: 'done', now })) },
  retry: {
    apply: (store, s, now) =>
      fenced(
        store.retry(s.lease, {
          runAt: new Date(now.getTime() + 5_000),
          error: { attempt: 1, at: now, name: 'Error', message: 'failed', code: 'JOB_FAILED' },
          now,
        }),
      ),
  },
  sleep: { apply: (store, s, now) => fenced(store.sleep(s.lease, { runAt: new Date(now.getTime() + 60_000), now })) },
  wait: { apply: (store, s, now) => fenced(store.wait(s.lease, { for: { signal: 'never' }, now })) },
  release: { apply: (store, s, now) => fenced(store.release(s.lease, now)) },
  deadLetter: { apply: (store, s, now) => fenced(store.deadLetter(s.lease, { reason: 'lifecycle case', now })) },
  wake: { apply: async (store, s, now) => ((await store.wake(s.id, now)) ? 'applied' : 'refused') },
  signal: { sameOperationAs: SIGNALS, apply: async (store, s, now) => ((await store.signal(s.id, { name: 'other', data: 1, now })) ? 'applied' : 'refused') },
  signalWake: { sameOperationAs: SIGNALS, apply: async (store, s, now) => ((await store.signal(s.id, { name: 'go', data: 1, now })) ? 'applied' : 'refused') },
  dependenciesMet: settleDriver('complete', 'fail'),
  dependencyFailed: settleDriver('deadLetter', 'fail'),
  dependencyCancelled: settleDriver('cancel', 'cancel'),
  cancel: {
    sameOperationAs: CANCELS,
    apply: async (store, s, now) => ((await store.cancelJob(s.id, { now }))?.outcome === 'cancelled' ? 'applied' : 'refused'),
  },
  requestCancel: {
    sameOperationAs: CANCELS,
    apply: async (store, s, now) => ((await store.cancelJob(s.id, { now }))?.outcome === 'requested' ? 'applied' : 'refused'),
  },
  cancelExpired: {
    now: LEASES_EXPIRED_AT,
    sameOperationAs: CANCELS,
    apply: async (store, s, now) => ((await store.cancelJob(s.id, { now }))?.outcome === 'cancelled' ? 'applied' : 'refused'),
  },
  completeCancel: {
    async prepare(store, s) {
      if (s.status === 'running') await store.cancelJob(s.id, { now: SETUP_AT });
    },
    apply: (store, s, now) => fenced(store.completeCancel(s.lease, now)),
  },
  replay: { apply: async (store, s, now) => ((await store.replayDeadLetter(s.id, now)) === s.id ? 'applied' : 'refused') },
  retryJob: { apply: async (store, s, now) => ((await store.retryJob(s.id, now))?.outcome === 'retried' ? 'applied' : 'refused') },
  runJobNow: {
    // The queued subject is delayed (due after the operation's time); the others are due from the setup on.
    async setUp(store, status, name) {
      if (status !== 'queued') return undefined;
      const id = await enqueueOne(store, { name, runAt: at(60_000) }, SETUP_AT);
      return { id, status, name, lease: strangerLease(id) };
    },
    apply: async (store, s, now) => ((await store.runJobNow(s.id, now))?.outcome === 'due' ? 'applied' : 'refused'),
  },
  removeJob: { apply: async (store, s, now) => ((await store.removeJob(s.id, now))?.outcome === 'removed' ? 'applied' : 'refused') },
};

/** The statuses from which `row` must be refused: none of its own, nor of the rows of the same operation. */
function refusedFrom(row: TransitionName, driver: Driver): JobStatus[] {
  const same = [row, ...(driver.sameOperationAs ?? [])];
  return JOB_STATUSES.filter((status) => !same.some((name) => LIFECYCLE[name].from.includes(status)));
}

/** Checks the job after `row` was applied to it from `before`. */
function expectRowApplied(row: TransitionName, before: JobRecord, after: JobRecord | null): void {
  const to = statusAfter(row, before.status);
  if (to === 'removed') {
    expect(after).toBeNull();
    return;
  }
  expect(after).not.toBeNull();
  const job = after!;
  expect({ row, status: job.status, attempt: job.attempt }).toEqual({ row, status: to, attempt: attemptAfter(row, before.attempt) });
  switch (LIFECYCLE[row].lease) {
    case 'clear':
    case 'none':
      expect({ row, lease: job.lease }).toEqual({ row, lease: undefined });
      break;
    case 'new':
      expect(job.lease?.token).toBeDefined();
      expect(job.lease?.token).not.toBe(before.lease?.token);
      break;
    case 'extend':
      expect(job.lease?.token).toBe(before.lease?.token);
      expect(job.lease!.until.getTime()).toBeGreaterThan(before.lease!.until.getTime());
      break;
    case 'keep':
      expect(job.lease?.token).toBe(before.lease?.token);
      break;
  }
}

/** Checks that a refused operation changed neither the status nor the attempt nor the lease. */
function expectUnchanged(row: TransitionName, before: JobRecord, after: JobRecord | null): void {
  expect({ row, status: after?.status, attempt: after?.attempt, token: after?.lease?.token }).toEqual({
    row,
    status: before.status,
    attempt: before.attempt,
    token: before.lease?.token,
  });
}

/** The rows of enqueues with dependencies: not driven on a store that refuses dependencies (see `ConformanceOptions.transactions`). */
const DEPENDENCY_ROWS: TransitionName[] = ['enqueueWaiting', ...SETTLES];

export function describeLifecycle(ctx: ConformanceContext, options: { dependencies: boolean } = { dependencies: true }): void {
  describe('lifecycle table (generated from LIFECYCLE)', () => {
    it('has a driver for every row', () => {
      expect(Object.keys(DRIVERS).sort()).toEqual(Object.keys(LIFECYCLE).sort());
    });

    for (const row of Object.keys(LIFECYCLE) as TransitionName[]) {
      const driver = DRIVERS[row];
      if (driver === 'own-suite' || (!options.dependencies && DEPENDENCY_ROWS.includes(row))) continue;
      const rule = LIFECYCLE[row];
      const refused = refusedFrom(row, driver);
      const title = `${row}: ${rule.from.join('/')} → ${rule.to}${refused.length > 0 ? `; changes nothing from ${refused.join('/')}` : ''}`;

      it(title, async () => {
        const { store } = ctx;
        const now = driver.now ?? OP_AT;
        const statuses = [...rule.from, ...refused];
        const subjects = [];
        for (const status of statuses) {
          const name = nameOf(row, status);
          subjects.push((await driver.setUp?.(store, status, name)) ?? (await jobIn(store, status, name, driver.job?.(name))));
        }
        for (const subject of subjects) await driver.prepare?.(store, subject);
        for (const subject of subjects) {
          const before = await mustGet(store, subject.id);
          const outcome = await driver.apply(store, subject, now);
          const after = await store.getJob(subject.id);
          if (rule.from.includes(subject.status)) {
            expect({ row, from: subject.status, outcome }).toEqual({ row, from: subject.status, outcome: 'applied' });
            expectRowApplied(row, before, after);
          } else {
            expect({ row, from: subject.status, outcome }).toEqual({ row, from: subject.status, outcome: 'refused' });
            expectUnchanged(row, before, after);
          }
        }
      });

      if (!isFenced(row)) continue;

      it(`${row}: a token that does not hold the lease changes nothing (LEASE_LOST)`, async () => {
        const { store } = ctx;
        const subject = await jobIn(store, 'running', nameOf(row, 'running'));
        await driver.prepare?.(store, subject);
        const before = await mustGet(store, subject.id);
        expect(await driver.apply(store, { ...subject, lease: strangerLease(subject.id) }, driver.now ?? OP_AT)).toBe('refused');
        expectUnchanged(row, before, await store.getJob(subject.id));
      });

      it(`${row}: after a cancel was requested, ${refusedAfterCancelRequest(row) ? 'refused with CANCELLED, nothing changed' : 'still applies'}`, async () => {
        const { store } = ctx;
        const subject = await jobIn(store, 'running', nameOf(row, 'running'));
        await driver.prepare?.(store, subject);
        await store.cancelJob(subject.id, { now: SETUP_AT });
        const before = await mustGet(store, subject.id);
        const now = driver.now ?? OP_AT;
        if (refusedAfterCancelRequest(row)) {
          await expect(driver.apply(store, subject, now)).rejects.toMatchObject({ code: 'CANCELLED' });
          expectUnchanged(row, before, await store.getJob(subject.id));
        } else {
          expect(await driver.apply(store, subject, now)).toBe('applied');
          expectRowApplied(row, before, await store.getJob(subject.id));
        }
      });
    }
  });
}
