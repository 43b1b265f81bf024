import type { Clock } from '../support/clock.js';
import type { Logger } from '../support/logger.js';
import type { JobStore } from '../store/store.js';

/**
 * How often, at most, a parent waiting in `ctx.waitForJob` looks at its jobs again on its own: 5
 * minutes. Children wake their parent when they finish; the looks bound the delay when that wake
 * is lost (the process died between the child's completion and the wake, or its completion write
 * timed out from the engine's view but landed) or when the awaited job is not a child of the
 * waiting job (an enqueue deduplicated onto a job someone else enqueued). The first look is
 * {@link JOB_WAIT_FIRST_RECHECK_MS} after the wait began, each next one after as long again as the
 * parent has waited so far (30 s, 1 min, 2 min, 4 min), then every 5 minutes: a lost wake of a
 * short child costs about 30 s, and a wait of days costs a look every 5 minutes.
 */
export const JOB_WAIT_RECHECK_MS = 5 * 60_000;

/** The first look of a parent waiting in `ctx.waitForJob` at its jobs on its own (see {@link JOB_WAIT_RECHECK_MS}). */
export const JOB_WAIT_FIRST_RECHECK_MS = 30_000;

/** When a parent that began waiting at `since` looks again at its jobs on its own, looking now (see {@link JOB_WAIT_RECHECK_MS}). */
export function jobWaitRecheckAt(since: Date, now: Date): Date {
  const waited = now.getTime() - since.getTime();
  return new Date(now.getTime() + Math.min(JOB_WAIT_RECHECK_MS, Math.max(JOB_WAIT_FIRST_RECHECK_MS, waited)));
}

/**
 * True when a wait for `ids` is decided: one of them is dead or cancelled (the wait fails) or none
 * can still change (each is completed or gone).
 */
export async function waitDecided(store: JobStore, ids: readonly string[]): Promise<boolean> {
  const jobs = await Promise.all(ids.map((id) => store.getJob(id)));
  return jobs.some((job) => job?.status === 'dead' || job?.status === 'cancelled') || jobs.every((job) => job === null || job.status === 'completed');
}

/**
 * Wakes `parentId` when it waits for jobs and that wait is decided ({@link waitDecided}).
 * `finished` is the child whose completion or death triggered the call, if any. The check and the
 * wake are separate reads/writes, but every finishing child runs this after its own outcome is
 * stored, and the parent runs it (without `finished`) after parking, so no wake-up is lost.
 *
 * A fan-in of n children costs O(n), not O(n²): a finishing child first asks the store two
 * index-answered questions (is the parent waiting for me; is one of its children still
 * unfinished and awaited) and reads neither the parent nor its siblings. Only the child that may
 * have decided the wait (usually the last) reads the parent and the awaited jobs.
 */
export async function wakeIfJobsFinished(
  deps: { store: JobStore; clock: Clock; onWoken: () => void },
  parentId: string,
  finished?: { id: string; dead: boolean },
): Promise<boolean> {
  const { store } = deps;
  if (finished?.dead) {
    // A dead awaited job decides the wait at once (CHILD_FAILED).
    if (!(await store.isWaitingFor(parentId, finished.id))) return false;
  } else {
    if (finished) {
      const active = await store.findActiveChild(parentId);
      if (active !== null && (await store.isWaitingFor(parentId, active))) return false; // an awaited sibling still runs
      if (!(await store.isWaitingFor(parentId, finished.id))) return false;
    }
    const parent = await store.getJob(parentId);
    if (!finished && parent?.status === 'queued') {
      // The parent's own look after parking found it queued already: woken meanwhile, by a child or
      // by the store itself (a store may wake, inside `wait`, a parent whose jobs had all finished).
      // Nothing may have told this engine, whose last claim may have come back short: wake it.
      deps.onWoken();
      return false;
    }
    const awaited = parent?.status === 'waiting' ? parent.waitingFor?.jobs : undefined;
    if (!awaited || awaited.length === 0 || !(await waitDecided(store, awaited))) return false;
  }
  const woke = await store.wake(parentId, deps.clock.now());
  if (woke) deps.onWoken();
  return woke;
}

/** What the parent wake reads of a finished job's event. */
interface FinishedJob {
  id: string;
  parentId?: string;
}

/** The finish events of jobs the parent wake listens to: the engine's `EventBus` is one. */
export interface JobFinishEvents {
  on(event: 'job:completed' | 'job:dead' | 'job:cancelled', listener: (event: { job: FinishedJob }) => Promise<void> | undefined): unknown;
}

/**
 * Hooks child completion into the engine: when a job with a parent completes or dies, its parent
 * is woken if it waits for its jobs and they have all finished. A failed wake is logged; the
 * parent then re-checks on its own (see {@link JOB_WAIT_RECHECK_MS}).
 *
 * The checks of one parent run one after another in this process: the runs of one claim complete in
 * one batch, so a fan-out's children often end together, and checked at once each would find no
 * sibling still running and read the parent and every awaited job (n children, n² reads). In turn,
 * the first wakes the parent and the others find it no longer waiting, from the index alone.
 */
export function wakeParentsOnFinish(deps: { events: JobFinishEvents; store: JobStore; clock: Clock; logger: Logger; onWoken: () => void }): void {
  /** Per parent, the last check queued in this process. */
  const queued = new Map<string, Promise<void>>();
  const check = async (parentId: string, finished: { id: string; dead: boolean }): Promise<void> => {
    try {
      await wakeIfJobsFinished(deps, parentId, finished);
    } catch (err) {
      deps.logger.error(
        { err, jobId: parentId, childId: finished.id },
        `Job ${parentId}: could not wake it after its child ${finished.id} finished; it looks at its children again on its own within ${JOB_WAIT_RECHECK_MS / 60_000} minutes`,
      );
    }
  };
  // Not an async function: most finished jobs have no parent, and those return without a promise.
  const onFinished = (job: FinishedJob, dead: boolean): Promise<void> | undefined => {
    const parentId = job.parentId;
    if (parentId === undefined) return undefined;
    const next = (queued.get(parentId) ?? Promise.resolve()).then(() => check(parentId, { id: job.id, dead }));
    queued.set(parentId, next);
    return next.then(() => {
      if (queued.get(parentId) === next) queued.delete(parentId);
    });
  };
  deps.events.on('job:completed', ({ job }) => onFinished(job, false));
  deps.events.on('job:dead', ({ job }) => onFinished(job, true));
  // A cancelled child fails the wait as a dead one does (`CHILD_CANCELLED`).
  deps.events.on('job:cancelled', ({ job }) => onFinished(job, true));
}
