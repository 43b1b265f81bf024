/**
 * What a running engine records about itself so operators can see which engines are alive, what
 * they serve and what they run (`loom.workers.list()`, `loom workers ls`, the dashboard's Workers
 * page). The engine writes it every beat and deletes it on a clean stop; a row whose `expiresAt`
 * has passed belongs to an engine presumed dead, and stores leave it out of every list.
 */

/** The most job ids a presence row lists in `runningJobIds` (`running` counts them all). */
export const MAX_PRESENCE_JOB_IDS = 100;

/** The most rows {@link JobStore.listPresence} returns. */
export const MAX_LISTED_WORKERS = 1_000;

/** One engine instance, as its last beat described it. */
export interface WorkerPresence {
  /** The engine's id: its `owner` option (what its leases carry as `lease.owner`). */
  id: string;
  /** The host name of its machine (`os.hostname()`). */
  host: string;
  /** Its process id. */
  pid: number;
  /** The version of `@loom/core` it runs. */
  version: string;
  /** The Node.js version it runs on (`process.version`). */
  node: string;
  /** The queues it claims from. */
  queues: string[];
  /** How many runs it takes at once (the `concurrency` option). */
  concurrency: number;
  /** Runs in flight at its last beat. */
  running: number;
  /** Ids of those runs' jobs, at most {@link MAX_PRESENCE_JOB_IDS}. */
  runningJobIds: string[];
  /** `running`, or `stopping` once `loom.stop()` began (it finishes its runs, then its row goes). */
  state: 'running' | 'stopping';
  /** When it started (`loom.start()`). */
  startedAt: Date;
  /** Its last beat: the `now` of the write. */
  lastSeenAt: Date;
  /**
   * When it counts as gone if no later beat replaced this row: `lastSeenAt` plus
   * `PRESENCE_MISSED_BEATS` beat intervals. Stores leave expired rows out of lists and may delete
   * them (MongoStore's TTL index does).
   */
  expiresAt: Date;
}

function isDate(value: unknown): value is Date {
  return (value instanceof Date || Object.prototype.toString.call(value) === '[object Date]') && !Number.isNaN((value as Date).getTime());
}

/**
 * What is wrong with a presence row a store was given, or undefined when nothing is: every field
 * of {@link WorkerPresence} of its type, `id` not empty, at most {@link MAX_PRESENCE_JOB_IDS} job
 * ids. Stores refuse a row with a problem (`INVALID_ARGUMENT`), storing nothing.
 */
export function presenceProblem(presence: unknown): string | undefined {
  if (typeof presence !== 'object' || presence === null) return 'must be an object';
  const p = presence as Record<string, unknown>;
  if (typeof p.id !== 'string' || p.id === '') return 'id must be a non-empty string';
  for (const field of ['host', 'version', 'node'] as const) if (typeof p[field] !== 'string') return `${field} must be a string`;
  for (const field of ['pid', 'concurrency', 'running'] as const) {
    if (typeof p[field] !== 'number' || !Number.isSafeInteger(p[field]) || p[field] < 0) return `${field} must be a whole number, at least 0`;
  }
  for (const field of ['queues', 'runningJobIds'] as const) {
    const list = p[field];
    if (!Array.isArray(list) || !list.every((v) => typeof v === 'string')) return `${field} must be an array of strings`;
  }
  if ((p.runningJobIds as string[]).length > MAX_PRESENCE_JOB_IDS) return `runningJobIds must list at most ${MAX_PRESENCE_JOB_IDS} ids`;
  if (p.state !== 'running' && p.state !== 'stopping') return "state must be 'running' or 'stopping'";
  for (const field of ['startedAt', 'lastSeenAt', 'expiresAt'] as const) if (!isDate(p[field])) return `${field} must be a valid Date`;
  return undefined;
}

/** The fields of a presence row, copied (a store keeps or returns its own copy, never the caller's objects). */
export function copyPresence(p: WorkerPresence): WorkerPresence {
  return {
    id: p.id,
    host: p.host,
    pid: p.pid,
    version: p.version,
    node: p.node,
    queues: [...p.queues],
    concurrency: p.concurrency,
    running: p.running,
    runningJobIds: [...p.runningJobIds],
    state: p.state,
    startedAt: new Date(p.startedAt.getTime()),
    lastSeenAt: new Date(p.lastSeenAt.getTime()),
    expiresAt: new Date(p.expiresAt.getTime()),
  };
}
