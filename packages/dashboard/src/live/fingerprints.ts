import { createHash } from 'node:crypto';
import type { JobRecord, QueueSummary, StoredScheduleInfo, WorkerPresence } from '@loom/core';

/**
 * What a live page is about: the queues and their counts (overview and job lists), the schedules,
 * or one job. Each has a fingerprint that changes when what the page shows changes; the page
 * carries the one it was rendered with, so a change between rendering and the browser's
 * connecting to the stream is not missed.
 */
export type LiveTopic = { kind: 'queues' } | { kind: 'schedules' } | { kind: 'workers' } | { kind: 'job'; id: string };

function hash(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('base64url').slice(0, 16);
}

export function queuesFingerprint(queues: readonly QueueSummary[]): string {
  return hash(queues.map((q) => [q.name, q.paused, q.counts, q.oldestQueuedAt?.getTime()]));
}

export function schedulesFingerprint(schedules: readonly StoredScheduleInfo[]): string {
  return hash(schedules.map((s) => [s.name, s.paused, s.lastFireAt?.getTime(), s.cron, s.timezone]));
}

/** Which engines are alive and what they run; not their beats (a page would reload every few seconds for nothing). */
export function workersFingerprint(workers: readonly WorkerPresence[]): string {
  return hash(workers.map((w) => [w.id, w.state, w.running, w.runningJobIds, w.queues, w.concurrency]));
}

export function jobFingerprint(job: JobRecord | null): string {
  return job === null ? 'gone' : hash([job.status, job.updatedAt.getTime(), job.steps.length, job.errors.length]);
}
