import type { JobRecord } from '../store/job-record.js';
import type { ScheduleEventMap } from '../cron/schedule-events.js';
import type { Logger } from '../support/logger.js';
import { plainConstructor } from '../support/plain-constructor.js';

/** The identity of a job as events report it. */
export interface JobEventInfo {
  id: string;
  name: string;
  queue: string;
  /** The attempt this event is about (1-based). */
  attempt: number;
  maxAttempts: number;
  idempotencyKey?: string;
  scheduledFor?: Date;
  /** Child jobs (`ctx.enqueue`): the job that enqueued this one. */
  parentId?: string;
  /** Jobs that depend on this one (`dependsOn`), as the engine last read it; absent when none. */
  dependents?: string[];
}

/** Every event `loom.on` can listen to, with what its listener receives. */
export interface LoomEventMap extends ScheduleEventMap {
  /** A worker claimed the job and is about to run it. */
  'job:started': { job: JobEventInfo };
  /** The job finished and its completion was stored. */
  'job:completed': { job: JobEventInfo; result: unknown; durationMs: number };
  /** An attempt failed (stored); `willRetry` tells whether a `job:retrying` or `job:dead` follows. */
  'job:failed': { job: JobEventInfo; error: Error; willRetry: boolean };
  /** A failed job was put back in the queue to run again at `runAt`. */
  'job:retrying': { job: JobEventInfo; error: Error; runAt: Date; delayMs: number };
  /** The job was moved to the dead letters. */
  'job:dead': { job: JobEventInfo; reason: string; error?: Error };
  /** A running job reported progress (`ctx.progress`); `progress` is the value now stored on the job. */
  'job:progress': { job: JobEventInfo; progress: number | Record<string, unknown> };
  /**
   * The job was cancelled (`loom.jobs.cancel`): reported by the instance that cancelled a queued or
   * waiting job, or by the instance whose run of it ended after the cancel was requested.
   */
  'job:cancelled': { job: JobEventInfo; reason?: string };
  /** This instance paused a queue (`loom.queues.pause`): no instance claims from it any more. */
  'queue:paused': { queue: string };
  /** This instance resumed a queue (`loom.queues.resume`). */
  'queue:resumed': { queue: string };
  /** The run ended without finishing and without failing (a durable sleep); it resumes later. */
  'job:suspended': { job: JobEventInfo; reason: string; until?: Date };
  /** Something went wrong in the engine itself (a store call failed, a listener threw); it keeps going. */
  'worker:error': { error: Error; operation: string; jobId?: string };
}

export type LoomEventName = keyof LoomEventMap;
export type LoomEventListener<E extends LoomEventName> = (event: LoomEventMap[E]) => void;

/** Builds the event view of a stored job (or of its summary). */
export function jobEventInfo(
  job: Pick<JobRecord, 'id' | 'name' | 'queue' | 'attempt' | 'maxAttempts' | 'idempotencyKey' | 'scheduledFor' | 'parentId' | 'dependents'>,
): JobEventInfo {
  return new EventInfo(job);
}

/** A run's {@link JobEventInfo}, made by a constructor: it lives as long as its run (see support/plain-constructor.ts). */
const EventInfo = plainConstructor(function (
  this: JobEventInfo,
  job: Pick<JobRecord, 'id' | 'name' | 'queue' | 'attempt' | 'maxAttempts' | 'idempotencyKey' | 'scheduledFor' | 'parentId' | 'dependents'>,
) {
  this.id = job.id;
  this.name = job.name;
  this.queue = job.queue;
  this.attempt = job.attempt;
  this.maxAttempts = job.maxAttempts;
  if (job.idempotencyKey !== undefined) this.idempotencyKey = job.idempotencyKey;
  if (job.scheduledFor !== undefined) this.scheduledFor = job.scheduledFor;
  if (job.parentId !== undefined) this.parentId = job.parentId;
  if (job.dependents !== undefined && job.dependents.length > 0) this.dependents = [...job.dependents];
});

/**
 * A typed event emitter whose `emit` never throws: a listener that throws (or rejects) is logged
 * and the worker carries on.
 */
export class EventBus {
  private readonly listeners = new Map<LoomEventName, Set<(event: never) => void>>();

  constructor(private readonly logger: Logger) {}

  /** Adds a listener; returns a function that removes it. */
  on<E extends LoomEventName>(event: E, listener: LoomEventListener<E>): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(listener as (event: never) => void);
    return () => set.delete(listener as (event: never) => void);
  }

  emit<E extends LoomEventName>(event: E, payload: LoomEventMap[E]): void {
    const listeners = this.listeners.get(event);
    if (listeners === undefined || listeners.size === 0) return;
    for (const listener of listeners) {
      try {
        const result = (listener as LoomEventListener<E>)(payload) as unknown;
        if (result instanceof Promise) result.catch((err: unknown) => this.listenerFailed(event, err));
      } catch (err) {
        this.listenerFailed(event, err);
      }
    }
  }

  private listenerFailed(event: LoomEventName, err: unknown): void {
    this.logger.error({ err, event }, `A listener of "${event}" threw; the engine ignored it and carries on. Fix the listener.`);
  }
}
