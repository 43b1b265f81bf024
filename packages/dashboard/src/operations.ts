import type { JobRecord, JobStatus, JobSummary, QueueSummary } from '@loom/core';

/** A page of the jobs list: newest first; `next` when more follow. */
export interface JobListPage {
  jobs: JobSummary[];
  next?: string;
}

/** What the jobs list asks for; every field a plain value checked by the route. */
export interface JobListQuery {
  /** Absent: every status. */
  statuses?: JobStatus[];
  name?: string;
  queue?: string;
  cursor?: string;
  limit: number;
}

/** A schedule as its page shows it; `cron` is absent until an engine described it to the store. */
export interface ScheduleRow {
  name: string;
  cron?: string;
  timezone?: string;
  paused: boolean;
  lastFireAt: Date | null;
  nextFireAt: Date | null;
}

/** Dead letters an action applies to: all of them, or those of a job name and/or queue. */
export interface DeadLetterSelection {
  name?: string;
  queue?: string;
  /** Only those that died before this instant (a purge deletes what its confirmation counted, not later ones). */
  before?: Date;
}

/** Jobs that finished per time bucket, oldest bucket first (the overview's chart). */
export interface FinishedSeries {
  /** Start of each bucket. */
  starts: Date[];
  bucketMs: number;
  /** Null when the store cannot count completions cheaply (a MongoStore keeping completed jobs forever). */
  completed: number[] | null;
  dead: number[];
}

/**
 * Everything the dashboard reads and does, in one place: the pages and actions use nothing else.
 * Built over a bare `JobStore` or over a running `Loom` (whose facade also wakes its own workers
 * at once after a retry and aborts a cancelled run in this process without waiting for a heartbeat).
 */
export interface DashboardOperations {
  queues(): Promise<QueueSummary[]>;
  listJobs(query: JobListQuery): Promise<JobListPage>;
  getJob(id: string): Promise<JobRecord | null>;
  /** The newest children of a job (a parent's `ctx.enqueue`d jobs that have not died). */
  children(parentId: string, limit: number): Promise<JobRecord[]>;
  cancelJob(id: string): Promise<{ cancelled: boolean; status: JobStatus }>;
  retryJob(id: string): Promise<{ retried: boolean; status: JobStatus }>;
  removeJob(id: string): Promise<{ removed: boolean; status: JobStatus }>;
  pauseQueue(queue: string): Promise<void>;
  resumeQueue(queue: string): Promise<void>;
  retryDeadLetters(selection: DeadLetterSelection): Promise<{ replayed: number; skipped: number }>;
  purgeDeadLetters(selection: DeadLetterSelection): Promise<number>;
  schedules(): Promise<ScheduleRow[]>;
  pauseSchedule(name: string): Promise<void>;
  resumeSchedule(name: string): Promise<void>;
  /** Enqueues one run now; returns the job id. */
  triggerSchedule(name: string): Promise<string>;
  /** Completions and deaths per bucket over `[since, since + buckets * bucketMs)`; undefined when the store cannot count them. */
  finished(since: Date, bucketMs: number, buckets: number): Promise<FinishedSeries | undefined>;
}
