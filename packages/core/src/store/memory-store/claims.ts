/**
 * Claims and leases of a MemoryStore: taking due jobs from the claim index under the flow limits,
 * the flow holds a claim respects, and heartbeats (lease extensions).
 */
import { LEASE_EXPIRED_BEFORE_HEARTBEAT, LeaseLostError, LoomError } from '../../support/errors.js';
import { assertFlowLimits, reportFlowHolds, type FlowHoldRecord } from '../flow.js';
import type { JobRecord, JobStatus, LeaseRef } from '../job-record.js';
import type { TransitionName } from '../lifecycle.js';
import type { ClaimRequest, HeartbeatItem, HeartbeatOutcome, LeaseExtension } from '../store.js';
import { assertDate, assertOptionalString, assertString } from './arguments.js';
import { clonePlain } from './clone.js';
import { StoredLease, copyDate, copyRecord } from './record-copy.js';
import { sweep } from './retention.js';
import type { MemoryState } from './state.js';
import { leased, transition } from './transition.js';
import { mapPacked } from '../../support/packed-map.js';

export function claim(state: MemoryState, req: ClaimRequest): JobRecord[] {
  if (!Number.isInteger(req.limit) || req.limit < 1) {
    throw new LoomError('INVALID_ARGUMENT', `claim limit must be an integer >= 1, got ${String(req.limit)}`);
  }
  assertDate(req.now, 'claim now');
  assertDate(req.leaseUntil, 'claim leaseUntil');
  assertFlowLimits(req.flow, 'MemoryStore');
  sweep(state, req.now);
  const now = req.now.getTime();
  const gate = req.flow !== undefined && req.flow.length > 0 ? state.flow.gate(req.flow, now, req.leaseUntil.getTime()) : undefined;
  const jobs = state.index.take({ queues: req.queues, names: req.names, excludeNames: req.excludeNames, limit: req.limit, now, gate });
  if (gate)
    reportFlowHolds(
      req.onHeld,
      gate.holds.map((hold) => clonePlain(hold)),
    );
  // One copy of each date for the whole batch: stored dates are never mutated and copies go out,
  // so sharing them saves memory (every finished job keeps its startedAt) and garbage collection
  // (a new Date per job, referenced from old records, is copied by every young-generation GC).
  const leaseUntil = copyDate(req.leaseUntil);
  const startedAt = copyDate(req.now);
  const lease = (record: JobRecord): void => {
    record.lease = new StoredLease(req.owner, state.leaseToken(), leaseUntil);
    record.startedAt ??= startedAt;
    if (record.waitingFor !== undefined) record.waitingFor = undefined;
  };
  const claimed = mapPacked(jobs, (job) => {
    transition(state, job, claimOf(job.record.status), req.now, lease, startedAt);
    const { record } = job;
    state.series.add(record.queue, req.now, { started: 1, waitMs: Math.max(0, now - record.runAt.getTime()) });
    return copyRecord(record);
  });
  if (claimed.length > 0) state.series.prune(req.now);
  return claimed;
}

/** The claim the index made of a job in `status`: a due job, one whose lease ran out, one whose wait timed out. */
function claimOf(status: JobStatus): TransitionName {
  switch (status) {
    case 'running':
      return 'reclaim';
    case 'waiting':
      return 'claimAtTimeout';
    default:
      return 'claim';
  }
}

export function holdFlow(state: MemoryState, req: FlowHoldRecord & { now: Date }): void {
  assertString(req.name, 'holdFlow name');
  assertOptionalString(req.key, 'holdFlow key');
  assertDate(req.until, 'holdFlow until');
  assertDate(req.now, 'holdFlow now');
  state.flow.hold({ name: req.name, key: req.key, until: req.until });
}

export function flowHolds(state: MemoryState, now: Date): FlowHoldRecord[] {
  assertDate(now, 'flowHolds now');
  return state.flow.holdsAt(now.getTime());
}

export function extendLease(state: MemoryState, lease: LeaseRef, until: Date, now: Date): LeaseExtension {
  assertDate(until, 'extendLease until');
  assertDate(now, 'extendLease now');
  return extend(state, lease, until, now);
}

export function heartbeatMany(state: MemoryState, items: HeartbeatItem[], now: Date): HeartbeatOutcome[] {
  const valid =
    Array.isArray(items) &&
    items.every((item) => typeof item?.lease === 'object' && item.lease !== null && item.until instanceof Date && !Number.isNaN(item.until.getTime()));
  if (!valid) throw new LoomError('INVALID_ARGUMENT', 'heartbeatMany items must be an array of { lease, until: Date }');
  assertDate(now, 'heartbeatMany now');
  return items.map(({ lease, until }) => {
    try {
      return extend(state, lease, until, now);
    } catch (error) {
      if (LoomError.is(error, 'LEASE_LOST')) return 'lost';
      return { error: error as Error };
    }
  });
}

/** One heartbeat (see `JobStore.extendLease`). */
function extend(state: MemoryState, lease: LeaseRef, until: Date, now: Date): LeaseExtension {
  const job = leased(state, lease, 'extendLease');
  // A lease that ran out is over even if nobody took the job yet: its flow slot may have gone to
  // another run meanwhile, so reviving it could run the job over its limit (a worker resumed after SIGSTOP).
  if (job.record.lease!.until.getTime() < now.getTime()) throw new LeaseLostError(lease.jobId, LEASE_EXPIRED_BEFORE_HEARTBEAT);
  transition(state, job, 'extendLease', now, (record) => {
    record.lease = new StoredLease(record.lease!.owner, record.lease!.token, copyDate(until));
  });
  return job.record.cancelRequestedAt === undefined ? 'extended' : 'cancel-requested';
}
