/**
 * The rules of job dependencies that every store applies the same way: the batch's edges checked
 * for range and cycles before anything is stored, and what a finished dependency does to a job
 * waiting for it (see `settleDependents` in `store.ts`).
 */
import { DependencyFailedError, InvalidDependenciesError } from '../support/errors.js';
import type { DependencyFailurePolicy, ErrorRecord, JobRecord, JobStatus, NewJob } from './job-record.js';
import type { TransitionName } from './lifecycle.js';

/** The policy a job without `onDependencyFailure` has. */
export const DEFAULT_DEPENDENCY_FAILURE: DependencyFailurePolicy = 'fail';

/** Whether any job of the batch has dependencies. */
export function hasDependencies(jobs: readonly NewJob[]): boolean {
  return jobs.some((job) => (job.dependsOn?.length ?? 0) > 0 || (job.dependsOnBatch?.length ?? 0) > 0);
}

/**
 * Checks a batch's `dependsOnBatch` edges: positions in range, none its own, no cycle. Throws an
 * `InvalidDependenciesError` naming the problem (by position; `names` gives nodes' names, if any).
 */
export function checkBatchDependencies(jobs: readonly NewJob[], names?: readonly string[]): void {
  const label = (i: number): string => names?.[i] ?? `#${i}`;
  jobs.forEach((job, i) => {
    for (const d of job.dependsOnBatch ?? []) {
      if (!Number.isInteger(d) || d < 0 || d >= jobs.length)
        throw new InvalidDependenciesError(`job ${label(i)} depends on position ${String(d)}, not in the batch`);
      if (d === i) throw new InvalidDependenciesError(`a cycle: ${label(i)} -> ${label(i)}`);
    }
  });
  // Iterative depth-first search: 0 unvisited, 1 on the path, 2 done.
  const mark = new Uint8Array(jobs.length);
  for (let start = 0; start < jobs.length; start++) {
    if (mark[start] !== 0) continue;
    const path: number[] = [start];
    const next: number[] = [0];
    mark[start] = 1;
    while (path.length > 0) {
      const top = path[path.length - 1]!;
      const edges = jobs[top]!.dependsOnBatch ?? [];
      const k = next[next.length - 1]!;
      if (k >= edges.length) {
        mark[top] = 2;
        path.pop();
        next.pop();
        continue;
      }
      next[next.length - 1] = k + 1;
      const to = edges[k]!;
      if (mark[to] === 1) {
        const cycle = [...path.slice(path.indexOf(to)), to].map(label).join(' -> ');
        throw new InvalidDependenciesError(`a cycle: ${cycle}`);
      }
      if (mark[to] === 0) {
        mark[to] = 1;
        path.push(to);
        next.push(0);
      }
    }
  }
}

/** The ids a job depends on, once its batch's jobs have ids: `dependsOn` then `dependsOnBatch`, each once. */
export function dependencyIds(job: NewJob, batchIds: readonly string[]): string[] {
  return [...new Set([...(job.dependsOn ?? []), ...(job.dependsOnBatch ?? []).map((i) => batchIds[i]!)])];
}

/**
 * What a finished dependency in `status` does to a job waiting for it with `policy`: `'met'` (one
 * fewer unmet dependency), or the row that ends the job.
 */
export function dependencyOutcome(
  status: JobStatus,
  policy: DependencyFailurePolicy | undefined,
): 'met' | Extract<TransitionName, 'dependencyFailed' | 'dependencyCancelled'> {
  if (status === 'completed') return 'met';
  switch (policy ?? DEFAULT_DEPENDENCY_FAILURE) {
    case 'run':
      return 'met';
    case 'cancel':
      return 'dependencyCancelled';
    case 'fail':
      return 'dependencyFailed';
  }
}

/** The reason a job dead-lettered (or cancelled) because of a dependency carries. */
export function dependencyFailedReason(dependencyId: string, status: JobStatus): string {
  return `DEPENDENCY_FAILED: dependency ${dependencyId} is ${status}`;
}

/** The error a job dead-lettered by `dependencyFailed` gets in its history (code `DEPENDENCY_FAILED`). */
export function dependencyFailedError(
  job: Pick<JobRecord, 'id' | 'attempt' | 'priorAttempts'>,
  dependencyId: string,
  status: JobStatus,
  now: Date,
): ErrorRecord {
  const error = new DependencyFailedError(job.id, dependencyId, status);
  return { attempt: (job.priorAttempts ?? 0) + job.attempt, at: new Date(now.getTime()), name: error.name, message: error.message, code: error.code };
}
