import { FireTimes, LoomError, type Clock, type JobPagePosition, type JobStore } from '@loom/core';
import type { DashboardOperations, ScheduleRow } from './operations.js';

const ALL_STATUSES = ['queued', 'running', 'waiting', 'completed', 'dead', 'cancelled'] as const;

function encodeCursor(position: JobPagePosition): string {
  return Buffer.from(JSON.stringify([position.createdAt.getTime(), position.id])).toString('base64url');
}

function decodeCursor(cursor: string): JobPagePosition {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 2 || !Number.isSafeInteger(parsed[0]) || typeof parsed[1] !== 'string' || parsed[1] === '') {
    throw new LoomError('INVALID_ARGUMENT', 'The page cursor is not one the dashboard made; start again from the first page');
  }
  return { createdAt: new Date(parsed[0] as number), id: parsed[1] };
}

function notFound(id: string): LoomError {
  return new LoomError('JOB_NOT_FOUND', `No job with id ${id}`);
}

/** The dashboard's operations over a bare store (another process may run the engines). */
export function storeOperations(store: JobStore, clock: Clock): DashboardOperations {
  return {
    queues: () => store.listQueues(),
    async listJobs(query) {
      const page = await store.listJobPage({
        statuses: query.statuses ?? [...ALL_STATUSES],
        ...(query.name !== undefined ? { name: query.name } : {}),
        ...(query.queue !== undefined ? { queue: query.queue } : {}),
        ...(query.cursor !== undefined ? { after: decodeCursor(query.cursor) } : {}),
        limit: query.limit + 1,
      });
      if (page.length <= query.limit) return { jobs: page };
      const jobs = page.slice(0, query.limit);
      return { jobs, next: encodeCursor(jobs[jobs.length - 1]!) };
    },
    getJob: (id) => store.getJob(id),
    children: (parentId, limit) => store.listJobs({ parentId, limit }),
    async cancelJob(id) {
      const result = await store.cancelJob(id, { now: clock.now() });
      if (!result) throw notFound(id);
      return { cancelled: result.outcome !== 'unchanged', status: result.job.status };
    },
    async retryJob(id) {
      const result = await store.retryJob(id, clock.now());
      if (!result) throw notFound(id);
      return { retried: result.outcome === 'retried', status: result.status };
    },
    async removeJob(id) {
      const result = await store.removeJob(id, clock.now());
      if (!result) throw notFound(id);
      return { removed: result.outcome === 'removed', status: result.status };
    },
    pauseQueue: (queue) => store.setQueuePaused(queue, true, clock.now()),
    resumeQueue: (queue) => store.setQueuePaused(queue, false, clock.now()),
    async retryDeadLetters(selection) {
      const report = await store.replayDeadLetters(selection, { now: clock.now() });
      return { replayed: report.replayed, skipped: report.skipped.length };
    },
    purgeDeadLetters: (selection) => store.purgeDeadLetters(selection),
    async schedules() {
      const now = clock.now();
      return (await store.listSchedules()).map((record) => {
        const row: ScheduleRow = { name: record.name, paused: record.paused, lastFireAt: record.lastFireAt, nextFireAt: null };
        if (record.description) {
          row.cron = record.description.cron;
          row.timezone = record.description.timezone;
          const from = record.lastFireAt ?? record.firstSeenAt;
          if (!record.paused) row.nextFireAt = new FireTimes(record.description.cron, record.description.timezone).next(from > now ? from : now);
        }
        return row;
      });
    },
    async pauseSchedule(name) {
      if (!(await store.setSchedulePaused(name, true, clock.now()))) throw new LoomError('SCHEDULE_NOT_FOUND', `No schedule named ${name}`);
    },
    async resumeSchedule(name) {
      if (!(await store.setSchedulePaused(name, false, clock.now()))) throw new LoomError('SCHEDULE_NOT_FOUND', `No schedule named ${name}`);
    },
    async triggerSchedule(name) {
      const record = (await store.listSchedules()).find((s) => s.name === name);
      if (!record) throw new LoomError('SCHEDULE_NOT_FOUND', `No schedule named ${name}`);
      if (!record.description) throw new LoomError('SCHEDULE_NOT_FOUND', `Schedule ${name} cannot be triggered from here: no engine described it to the store yet`);
      const now = clock.now();
      const { job } = record.description;
      const [result] = await store.enqueue(
        [{ name, queue: job.queue, payload: job.payload, priority: job.priority, runAt: now, maxAttempts: job.maxAttempts, idempotencyKey: `cron:${name}:trigger:${now.toISOString()}`, scheduledFor: now }],
        { now },
      );
      return result!.id;
    },
    async finished(since, bucketMs, buckets) {
      if (typeof store.countFinished !== 'function') return undefined;
      const starts = Array.from({ length: buckets }, (_, i) => new Date(since.getTime() + i * bucketMs));
      const count = (status: 'completed' | 'dead') =>
        Promise.all(starts.map((from) => store.countFinished!({ status, from, to: new Date(from.getTime() + bucketMs) })));
      const [completed, dead] = await Promise.all([count('completed'), count('dead')]);
      return {
        starts,
        bucketMs,
        completed: completed.some((n) => n === null) ? null : (completed as number[]),
        dead: dead.map((n) => n ?? 0),
      };
    },
  };
}
