/// <reference types="jest" />
import { LoomError, type FlowHold, type FlowLimits, type JobRecord, type JobStore, type LeaseRef, type NewJob } from '@loom/core';

/**
 * The fixed instant every conformance test measures time from: stores never read the wall clock,
 * so the tests never do either.
 */
export const REFERENCE = new Date('2026-01-01T00:00:00.000Z');

/** `REFERENCE + ms`. */
export const at = (ms: number): Date => new Date(REFERENCE.getTime() + ms);

/**
 * jest's limit for a test that makes a hundred or more round trips to a real database: a deadline
 * against a hang, not a wait. The default 30 s is too short on a loaded 2-core machine (seen under
 * two CPU hogs), and a test cut off there keeps running in the background of jest's in-band run.
 */
export const HEAVY_TEST_MS = 180_000;

/** The default lease length of the tests. */
export const LEASE_MS = 30_000;

/** Gives the test-defining modules the store of the running test. */
export interface ConformanceContext {
  /** The store created for the current test (throws outside a test). */
  readonly store: JobStore;
  /** A second store on the same data (a second process), initialised; `store` itself when the store has none. */
  peer(): Promise<JobStore>;
  /**
   * The store splits queues into partitions (ConformanceOptions `partitioned`): claim order holds
   * within a partition only. The cases asserting one order over a queue's jobs use {@link orderedIt}.
   */
  readonly partitioned?: boolean;
}

/**
 * `it` for a case that asserts one claim order over all of a queue's jobs (or which of them a
 * flow limit lets start first): skipped on a partitioned store, where order holds per partition.
 */
export function orderedIt(ctx: ConformanceContext): typeof it {
  return ctx.partitioned === true ? it.skip : it;
}

/**
 * `it` for a case about what still holds on a partitioned store, in place of one order over a
 * queue's jobs: skipped on a store of one partition per queue, where the {@link orderedIt} cases say more.
 */
export function partitionedIt(ctx: ConformanceContext): typeof it {
  return ctx.partitioned === true ? it : it.skip;
}

/** A `NewJob` named `send` in queue `default`, due at {@link REFERENCE}. */
export function newJob(overrides: Partial<NewJob> = {}): NewJob {
  return { name: 'send', queue: 'default', payload: { n: 1 }, priority: 0, runAt: at(0), maxAttempts: 3, ...overrides };
}

/** Enqueues one job (not a duplicate) and returns its id. */
export async function enqueueOne(store: JobStore, overrides: Partial<NewJob> = {}, now = at(0)): Promise<string> {
  const [result] = await store.enqueue([newJob(overrides)], { now });
  expect(result.deduplicated).toBe(false);
  return result.id;
}

/** Options of {@link claimJobs}; defaults claim one `send` job from `default`. */
export interface ClaimOptions {
  now?: Date;
  names?: string[];
  queues?: string[];
  excludeNames?: string[];
  limit?: number;
  leaseMs?: number;
  owner?: string;
  flow?: FlowLimits[];
  onHeld?: (holds: FlowHold[]) => void;
}

export function claimJobs(store: JobStore, opts: ClaimOptions = {}): Promise<JobRecord[]> {
  const now = opts.now ?? at(0);
  return store.claim({
    owner: opts.owner ?? 'worker-a',
    queues: opts.queues ?? ['default'],
    names: opts.names ?? ['send'],
    excludeNames: opts.excludeNames,
    limit: opts.limit ?? 1,
    leaseUntil: new Date(now.getTime() + (opts.leaseMs ?? LEASE_MS)),
    now,
    ...(opts.flow ? { flow: opts.flow } : {}),
    ...(opts.onHeld ? { onHeld: opts.onHeld } : {}),
  });
}

/** The lease a claimed record carries. */
export function leaseOf(job: JobRecord): LeaseRef {
  if (!job.lease) throw new Error(`claimed job ${job.id} has no lease`);
  return { jobId: job.id, token: job.lease.token };
}

/** Claims exactly one job and returns it with its lease. */
export async function claimOne(store: JobStore, opts: ClaimOptions = {}): Promise<{ job: JobRecord; lease: LeaseRef }> {
  const jobs = await claimJobs(store, { ...opts, limit: 1 });
  expect(jobs).toHaveLength(1);
  return { job: jobs[0], lease: leaseOf(jobs[0]) };
}

/** Enqueues one job and claims it. */
export async function enqueueAndClaim(
  store: JobStore,
  overrides: Partial<NewJob> = {},
  opts: ClaimOptions = {},
): Promise<{ id: string; job: JobRecord; lease: LeaseRef }> {
  const id = await enqueueOne(store, overrides, opts.now);
  const { job, lease } = await claimOne(store, { names: [overrides.name ?? 'send'], queues: [overrides.queue ?? 'default'], ...opts });
  expect(job.id).toBe(id);
  return { id, job, lease };
}

/** Asserts that `promise` rejects with a Loom `LEASE_LOST` error. */
export async function expectLeaseLost(promise: Promise<unknown>): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toMatchObject({ code: 'LEASE_LOST' });
  expect(LoomError.is(error, 'LEASE_LOST')).toBe(true);
}

/** The job, which must exist. */
export async function mustGet(store: JobStore, id: string): Promise<JobRecord> {
  const job = await store.getJob(id);
  if (!job) throw new Error(`job ${id} not found`);
  return job;
}

/** The ids of `jobs`, in order. */
export const idsOf = (jobs: { id: string }[]): string[] => jobs.map((j) => j.id);
