import type { IncomingMessage } from 'node:http';
import { LoomError, toMs, type Clock, type Duration, type JobStore, type Logger } from '@loom/core';

/** Options of {@link loomDashboard}. */
export interface DashboardOptions {
  /** The store to show and steer: any `JobStore` (MemoryStore, MongoStore); no engine needs to run in this process. */
  store: JobStore;
  /**
   * Where the dashboard is mounted, e.g. `'/loom'`; links are built under it. In Express and
   * NestJS (`app.use('/loom', dashboard)`) it may be left out: the mount path is taken from the
   * request. @default `'/'` (or the framework's mount path)
   */
  basePath?: string;
  /**
   * Decides whether this request may act (retry, cancel, remove, pause, resume, trigger, purge).
   * Called for every action and every page (to show or hide the buttons). Without it the
   * dashboard is read-only. Reading is not checked here: put your authentication in front of the
   * mount as for any other admin page.
   */
  authorize?: (req: IncomingMessage) => boolean | Promise<boolean>;
  /** Signs CSRF tokens and flash messages. Give every instance behind one load balancer the same one. @default random per process */
  secret?: string;
  /** How often open pages poll the store for changes (one shared poll per dashboard while a page is open). @default '2s' */
  refreshInterval?: Duration;
  /** Jobs per list page, 1..500. @default 50 */
  pageSize?: number;
  /** The title in the header and the tab. @default 'Loom' */
  title?: string;
  /** Time for store operations and "how long ago". @default the system clock */
  clock?: Clock;
  /** Where errors reading the store are logged. @default console */
  logger?: Logger;
}

/** `'/loom/'` → `'/loom'`, `'/'` → `''`; refuses anything but a plain absolute path. */
export function normalizeBasePath(basePath: string): string {
  if (typeof basePath !== 'string' || !/^\/[A-Za-z0-9\-._~/]*$/.test(basePath) || basePath.includes('//')) {
    throw new LoomError('INVALID_ARGUMENT', `loomDashboard basePath must be an absolute path such as '/loom', got ${JSON.stringify(basePath)}`);
  }
  return basePath.replace(/\/+$/, '');
}

export function checkOptions(options: DashboardOptions): { refreshMs: number; pageSize: number } {
  if (typeof options !== 'object' || options === null) throw new LoomError('INVALID_ARGUMENT', 'loomDashboard needs options: { store }');
  const store = options.store as Partial<JobStore> | undefined;
  if (!store || typeof store.listJobPage !== 'function' || typeof store.listQueues !== 'function') {
    throw new LoomError('INVALID_ARGUMENT', 'loomDashboard needs { store }: a JobStore of Loom 0.2 or later (one with listJobPage and listQueues)');
  }
  if (options.authorize !== undefined && typeof options.authorize !== 'function') {
    throw new LoomError('INVALID_ARGUMENT', 'loomDashboard authorize must be a function (req) => boolean | Promise<boolean>');
  }
  if (options.secret !== undefined && (typeof options.secret !== 'string' || options.secret.length < 16)) {
    throw new LoomError('INVALID_ARGUMENT', 'loomDashboard secret must be a string of at least 16 characters');
  }
  let refreshMs: number;
  try {
    refreshMs = toMs(options.refreshInterval ?? '2s');
  } catch (err) {
    throw new LoomError('INVALID_ARGUMENT', `loomDashboard refreshInterval: ${(err as Error).message}`);
  }
  if (refreshMs < 50) throw new LoomError('INVALID_ARGUMENT', `loomDashboard refreshInterval must be at least 50 ms, got ${refreshMs} ms`);
  const pageSize = options.pageSize ?? 50;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 500)
    throw new LoomError('INVALID_ARGUMENT', `loomDashboard pageSize must be an integer from 1 to 500, got ${String(pageSize)}`);
  return { refreshMs, pageSize };
}
