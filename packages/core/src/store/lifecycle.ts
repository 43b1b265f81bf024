import type { JobStatus, LeaseRef } from './job-record.js';

/**
 * The job lifecycle as one table: every store operation that changes a job, the states it may
 * start from, the state it ends in, and what it does to the attempt, the lease and the flow slots.
 * `../shared/design/LIFECYCLE.md` is its prose; this is the rule. Both stores decide with it what a
 * write may do, and the conformance suite (`@loom/testing`) generates its transition cases from it,
 * so a new state or transition is one row here plus the cases the suite derives from the row.
 */

/** The name of each transition, after the store operation that makes it. */
export type TransitionName =
  | 'enqueue'
  | 'enqueueWaiting'
  | 'debounce'
  | 'claim'
  | 'reclaim'
  | 'claimAtTimeout'
  | 'extendLease'
  | 'recordStep'
  | 'progress'
  | 'appendLogs'
  | 'consumeSignal'
  | 'createWaitToken'
  | 'complete'
  | 'retry'
  | 'sleep'
  | 'wait'
  | 'release'
  | 'deadLetter'
  | 'wake'
  | 'signal'
  | 'signalWake'
  | 'dependenciesMet'
  | 'dependencyFailed'
  | 'dependencyCancelled'
  | 'cancel'
  | 'requestCancel'
  | 'cancelExpired'
  | 'completeCancel'
  | 'replay'
  | 'retryJob'
  | 'runJobNow'
  | 'removeJob';

/**
 * What a transition requires of the job beyond its status:
 * - `lease`: the caller's token holds the lease ({@link holdsLease}) and no cancel was requested;
 *   otherwise nothing changes and the store rejects with `LEASE_LOST` (or `CANCELLED` once a cancel
 *   was requested).
 * - `lease-despite-cancel`: the token holds the lease; a requested cancel does not stop it (a
 *   heartbeat, and the holder ending the cancelled run).
 * - `status`: no token; the write is conditional on the status (and the condition in `guard`) it
 *   read, so it never races another transition.
 * - `none`: a new job (enqueue), or a queued job an enqueue finds by its debounce key.
 */
export type Fence = 'lease' | 'lease-despite-cancel' | 'status' | 'none';

/** What a transition does to `attempt`. */
export type AttemptEffect = 'increment' | 'keep' | 'give-back' | 'reset' | 'zero';

/** What a transition does to the lease. */
export type LeaseEffect = 'new' | 'extend' | 'keep' | 'clear' | 'none';

/** What a transition does to the run's flow-control slots (global concurrency, group). */
export type SlotEffect = 'take' | 'keep' | 'free' | 'none';

/** One row of the lifecycle table. */
export interface Transition {
  /** The statuses it may start from (`[]`: the job does not exist yet). */
  readonly from: readonly JobStatus[];
  /** The status it ends in; `'removed'`: the job is deleted; `'unchanged'`: it keeps its status. */
  readonly to: JobStatus | 'removed' | 'unchanged';
  readonly fence: Fence;
  readonly attempt: AttemptEffect;
  readonly lease: LeaseEffect;
  readonly slots: SlotEffect;
  /** What else must hold, in words (the stores' filters say it in code). */
  readonly guard?: string;
}

/** Every transition a job can make. The order is a job's life. */
export const LIFECYCLE: { readonly [name in TransitionName]: Transition } = {
  enqueue: { from: [], to: 'queued', fence: 'none', attempt: 'zero', lease: 'none', slots: 'none', guard: 'its idempotency key is free' },
  enqueueWaiting: {
    from: [],
    to: 'waiting',
    fence: 'none',
    attempt: 'zero',
    lease: 'none',
    slots: 'none',
    guard: 'it depends on jobs (dependsOn) not all completed: waitingFor.dependencies lists those, and it has no timeout',
  },
  debounce: {
    from: ['queued'],
    to: 'queued',
    fence: 'none',
    attempt: 'keep',
    lease: 'none',
    slots: 'none',
    guard: 'it holds the debounce key and has not started',
  },
  claim: { from: ['queued'], to: 'running', fence: 'status', attempt: 'increment', lease: 'new', slots: 'take', guard: 'runAt <= now' },
  reclaim: {
    from: ['running'],
    to: 'running',
    fence: 'status',
    attempt: 'increment',
    lease: 'new',
    slots: 'take',
    guard: 'lease.until < now and no cancel requested',
  },
  claimAtTimeout: {
    from: ['waiting'],
    to: 'running',
    fence: 'status',
    attempt: 'increment',
    lease: 'new',
    slots: 'take',
    guard: 'its wait timeout runAt <= now',
  },
  extendLease: {
    from: ['running'],
    to: 'running',
    fence: 'lease-despite-cancel',
    attempt: 'keep',
    lease: 'extend',
    slots: 'keep',
    guard: 'the lease has not run out at now',
  },
  recordStep: { from: ['running'], to: 'running', fence: 'lease', attempt: 'keep', lease: 'keep', slots: 'keep', guard: 'first write of a step name wins' },
  progress: { from: ['running'], to: 'running', fence: 'lease', attempt: 'keep', lease: 'keep', slots: 'keep' },
  appendLogs: { from: ['running'], to: 'running', fence: 'lease', attempt: 'keep', lease: 'keep', slots: 'keep' },
  consumeSignal: { from: ['running'], to: 'running', fence: 'lease', attempt: 'keep', lease: 'keep', slots: 'keep', guard: 'a signal of that name is stored' },
  createWaitToken: {
    from: ['running'],
    to: 'running',
    fence: 'lease',
    attempt: 'keep',
    lease: 'keep',
    slots: 'keep',
    guard: 'stores a pending wait token of the job; its settlement arrives as a signal (signal / signalWake)',
  },
  complete: { from: ['running'], to: 'completed', fence: 'lease', attempt: 'keep', lease: 'clear', slots: 'free' },
  retry: { from: ['running'], to: 'queued', fence: 'lease', attempt: 'keep', lease: 'clear', slots: 'free' },
  sleep: { from: ['running'], to: 'queued', fence: 'lease', attempt: 'give-back', lease: 'clear', slots: 'free' },
  wait: {
    from: ['running'],
    to: 'waiting',
    fence: 'lease',
    attempt: 'give-back',
    lease: 'clear',
    slots: 'free',
    guard: 'the awaited signal is not stored yet',
  },
  release: { from: ['running'], to: 'queued', fence: 'lease', attempt: 'give-back', lease: 'clear', slots: 'free' },
  deadLetter: { from: ['running'], to: 'dead', fence: 'lease', attempt: 'keep', lease: 'clear', slots: 'free' },
  wake: { from: ['waiting'], to: 'queued', fence: 'status', attempt: 'keep', lease: 'none', slots: 'none' },
  signal: {
    from: ['queued', 'running', 'waiting'],
    to: 'unchanged',
    fence: 'status',
    attempt: 'keep',
    lease: 'keep',
    slots: 'keep',
    guard: 'stores the signal on a job that does not wait for it',
  },
  signalWake: { from: ['waiting'], to: 'queued', fence: 'status', attempt: 'keep', lease: 'none', slots: 'none', guard: 'it waits for that signal' },
  dependenciesMet: {
    from: ['waiting'],
    to: 'queued',
    fence: 'status',
    attempt: 'keep',
    lease: 'none',
    slots: 'none',
    guard: "settleDependents: its last unmet dependency completed (or ended otherwise, under onDependencyFailure 'run')",
  },
  dependencyFailed: {
    from: ['waiting'],
    to: 'dead',
    fence: 'status',
    attempt: 'keep',
    lease: 'none',
    slots: 'none',
    guard: "settleDependents: an unmet dependency is dead or cancelled, onDependencyFailure 'fail' (DEPENDENCY_FAILED)",
  },
  dependencyCancelled: {
    from: ['waiting'],
    to: 'cancelled',
    fence: 'status',
    attempt: 'keep',
    lease: 'none',
    slots: 'none',
    guard: "settleDependents: an unmet dependency is dead or cancelled, onDependencyFailure 'cancel'",
  },
  cancel: { from: ['queued', 'waiting'], to: 'cancelled', fence: 'status', attempt: 'keep', lease: 'none', slots: 'none' },
  requestCancel: {
    from: ['running'],
    to: 'running',
    fence: 'status',
    attempt: 'keep',
    lease: 'keep',
    slots: 'keep',
    guard: 'the lease has not run out: the holder ends it',
  },
  cancelExpired: {
    from: ['running'],
    to: 'cancelled',
    fence: 'status',
    attempt: 'keep',
    lease: 'clear',
    slots: 'free',
    guard: 'the lease has run out, or ran out after a cancel was requested',
  },
  completeCancel: { from: ['running'], to: 'cancelled', fence: 'lease-despite-cancel', attempt: 'keep', lease: 'clear', slots: 'free' },
  replay: { from: ['dead'], to: 'queued', fence: 'status', attempt: 'reset', lease: 'none', slots: 'none', guard: 'the dead letter still exists' },
  retryJob: { from: ['dead', 'cancelled'], to: 'queued', fence: 'status', attempt: 'reset', lease: 'none', slots: 'none' },
  runJobNow: {
    from: ['queued'],
    to: 'queued',
    fence: 'status',
    attempt: 'keep',
    lease: 'none',
    slots: 'none',
    guard: 'runAt > now and it does not sleep in a workflow (no sleepUntil after now): runAt becomes now',
  },
  removeJob: { from: ['completed', 'dead', 'cancelled'], to: 'removed', fence: 'status', attempt: 'keep', lease: 'none', slots: 'none' },
};

/** Whether `name` may start from a job in `status`. */
export function allows(name: TransitionName, status: JobStatus): boolean {
  return LIFECYCLE[name].from.includes(status);
}

/** The status a job in `from` is in after `name` (its `to`, or `from` for a transition that keeps it). */
export function statusAfter(name: TransitionName, from: JobStatus): JobStatus | 'removed' {
  const { to } = LIFECYCLE[name];
  return to === 'unchanged' ? from : to;
}

/** Whether `name` needs the caller's lease token. */
export function isFenced(name: TransitionName): boolean {
  const { fence } = LIFECYCLE[name];
  return fence === 'lease' || fence === 'lease-despite-cancel';
}

/** Whether a requested cancel stops `name` (every fenced write but a heartbeat and the cancel's own end). */
export function refusedAfterCancelRequest(name: TransitionName): boolean {
  return LIFECYCLE[name].fence === 'lease';
}

/** The attempt a job has after `name`, given the attempt it had before. */
export function attemptAfter(name: TransitionName, attempt: number): number {
  switch (LIFECYCLE[name].attempt) {
    case 'increment':
      return attempt + 1;
    case 'give-back':
      return attempt - 1;
    case 'reset':
    case 'zero':
      return 0;
    case 'keep':
      return attempt;
  }
}

/** Whether the job is held by no worker after `name` (its lease is cleared). */
export function clearsLease(name: TransitionName): boolean {
  return LIFECYCLE[name].lease === 'clear';
}

/** The part of a job that the lease rule reads. */
export interface LeasedState {
  status: JobStatus;
  lease?: { token: string } | undefined;
}

/**
 * The one lease rule: `lease` holds the job when the job is `running` under exactly that token.
 * Tokens are fresh per claim, so a worker whose lease was taken over (or that never had it) fails
 * this and its write changes nothing. Every fenced write of every store decides with it (on
 * MongoDB, as the filter `{ status: 'running', 'lease.token': token }` that states the same rule).
 */
export function holdsLease(job: LeasedState | null | undefined, lease: LeaseRef): boolean {
  return job != null && job.status === 'running' && job.lease !== undefined && job.lease.token === lease.token;
}
