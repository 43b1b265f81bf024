/**
 * Job dependencies in a MemoryStore: an enqueue checks them before anything is stored and links
 * each new job to its dependencies (their `dependents`); `settleDependents` applies what a finished
 * dependency does to the jobs waiting for it. A finished job with dependents is listed in
 * `state.unsettled` by `transition.ts` until it is settled.
 */
import { InvalidDependenciesError } from '../../support/errors.js';
import { checkBatchDependencies, dependencyFailedError, dependencyFailedReason, dependencyIds, dependencyOutcome, hasDependencies } from '../dependencies.js';
import type { JobRecord, NewJob } from '../job-record.js';
import { assertDate } from './arguments.js';
import { copyDate } from './record-copy.js';
import { releaseSettled, sweep } from './retention.js';
import type { MemoryState } from './state.js';
import { appendError } from './stored-job.js';
import { transition } from './transition.js';

const DEFAULT_SETTLE_LIMIT = 100;

/** Refuses a batch whose dependencies name unknown jobs or make a cycle (nothing is stored yet). */
export function checkDependencies(state: MemoryState, jobs: readonly NewJob[], pending?: ReadonlySet<string>): void {
  if (!hasDependencies(jobs)) return;
  checkBatchDependencies(jobs);
  const unknown = new Set<string>();
  for (const job of jobs) {
    if (job.dependsOn !== undefined && !Array.isArray(job.dependsOn)) throw new InvalidDependenciesError('dependsOn must be an array of job ids');
    for (const id of job.dependsOn ?? []) {
      if (typeof id !== 'string') throw new InvalidDependenciesError(`dependsOn holds a ${typeof id}, not a job id`);
      if (state.find(id) === undefined && !pending?.has(id)) unknown.add(id);
    }
  }
  if (unknown.size > 0) throw new InvalidDependenciesError(`unknown job ids: ${[...unknown].join(', ')}`);
}

/**
 * Gives the new records of a batch their dependencies, once every job of the batch has an id
 * (`ids`, in input order; `created[i]` is the record of `jobs[createdAt[i]]`): `dependsOn`, and
 * `waiting` for those not completed. Call {@link linkDependents} once they are stored.
 */
export function assignDependencies(state: MemoryState, jobs: readonly NewJob[], ids: readonly string[], records: ReadonlyMap<number, JobRecord>): void {
  for (const [i, record] of records) {
    const job = jobs[i]!;
    const deps = dependencyIds(job, ids);
    if (deps.length === 0) continue;
    record.dependsOn = deps;
    if (job.onDependencyFailure !== undefined) record.onDependencyFailure = job.onDependencyFailure;
    // A dependency of the same batch is new: it has not completed.
    const unmet = deps.filter((id) => state.find(id)?.record.status !== 'completed');
    if (unmet.length > 0) {
      record.status = 'waiting';
      record.waitingFor = { dependencies: unmet };
    }
  }
}

/** Adds each stored record to its dependencies' `dependents`; a dependency already dead or cancelled is settled by the next `settleDependents`. */
export function linkDependents(state: MemoryState, records: Iterable<JobRecord>): void {
  for (const record of records) {
    for (const id of record.dependsOn ?? []) {
      const dep = state.find(id)?.record;
      if (!dep) continue;
      (dep.dependents ??= []).push(record.id);
      if (dep.status === 'dead' || dep.status === 'cancelled') state.unsettled.add(id);
    }
  }
}

export function settleDependents(state: MemoryState, req: { now: Date; jobIds?: string[]; limit?: number }): number {
  assertDate(req.now, 'settleDependents now');
  const { now } = req;
  const work = req.jobIds !== undefined ? [...req.jobIds] : [...state.unsettled].slice(0, req.limit ?? DEFAULT_SETTLE_LIMIT);
  if (work.length > 0) sweep(state, now);
  let settled = 0;
  while (work.length > 0) {
    const id = work.shift()!;
    if (!state.unsettled.delete(id)) continue;
    const dep = state.find(id)?.record;
    if (!dep) continue;
    settled += 1;
    for (const dependentId of dep.dependents ?? []) {
      const job = state.active.get(dependentId);
      const unmet = job?.record.waitingFor?.dependencies;
      if (!job || job.record.status !== 'waiting' || unmet === undefined || !unmet.includes(id)) continue;
      const outcome = dependencyOutcome(dep.status, job.record.onDependencyFailure);
      if (outcome === 'met') {
        unmet.splice(unmet.indexOf(id), 1);
        if (unmet.length === 0) {
          transition(state, job, 'dependenciesMet', now, (r) => {
            r.waitingFor = undefined;
            r.runAt = copyDate(now);
          });
        }
        continue;
      }
      const reason = dependencyFailedReason(id, dep.status);
      transition(state, job, outcome, now, (r) => {
        r.waitingFor = undefined;
        if (outcome === 'dependencyFailed') {
          r.deadReason = reason;
          appendError(r, dependencyFailedError(r, id, dep.status, now));
        } else {
          r.cancelReason = reason;
        }
      });
      if (state.unsettled.has(dependentId)) work.push(dependentId);
    }
    releaseSettled(state, id);
  }
  return settled;
}
