import { checkWaitTokenLinkOptions, type WaitTokenLinkOptions } from './support/token-links.js';
import { randomUUID } from 'node:crypto';
import { availableParallelism, hostname } from 'node:os';
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Container } from 'inversify';
import type { RandomSource } from './jobs/backoff.js';
import { SystemClock, type Clock } from './support/clock.js';
import { MAX_TIMER_MS, toMs, type Duration } from './support/duration.js';
import { InvalidArgumentError } from './support/errors.js';
import type { JobClass } from './jobs/job-class.js';
import type { JobInstanceSource, ResolveJob } from './jobs/discovery.js';
import { ConsoleLogger, type Logger } from './support/logger.js';
import type { JobStore } from './store/store.js';
import { DEFAULT_JOB_LOG_BYTES, DEFAULT_JOB_LOG_LINES, MAX_JOB_LOG_BYTES, MAX_JOB_LOG_LINES } from './store/job-record.js';
import type { ResolvedSandbox, SandboxOptions } from './sandbox/sandbox-options.js';

/** Options of `Loom.create`. */
export interface LoomOptions {
  /**
   * The inversify container job classes are built through. Give this or `resolve`, not both.
   * @default a new, empty Container (when `resolve` is not given either)
   */
  container?: Container;
  /**
   * Builds a job class's instance with any other DI (Nest, tsyringe, hand-written): called once
   * per job class by `Loom.create`, may be async. Give this or `container`, not both.
   */
  resolve?: ResolveJob;
  store: JobStore;
  /** Restrict the engine to these job classes. @default every `@Job` class loaded so far */
  jobs?: readonly JobClass[];
  /** Most parallel runs in this instance. @default 10 */
  concurrency?: number;
  /** Queues this instance claims from. @default every queue of the known jobs */
  queues?: readonly string[];
  /** Lease length; renewed every third of it while a handler runs. @default '30s' */
  lease?: Duration;
  /** How long `stop()` lets runs in flight finish before releasing them. @default '10s' */
  shutdownGrace?: Duration;
  /** How often idle workers look for due jobs. @default '1s' */
  pollInterval?: Duration;
  /** @default the system clock */
  clock?: Clock;
  /** @default a ConsoleLogger at level 'info' */
  logger?: Logger;
  /** Random source for backoff jitter, in [0, 1). @default Math.random */
  random?: RandomSource;
  /** Names this instance in leases (`lease.owner`). @default `<host>:<pid>:<random>` */
  owner?: string;
  /**
   * How often this engine, once started, records its presence in the store (host, pid, version,
   * queues, concurrency, what it runs: `loom.workers.list()`, `loom workers ls`, the dashboard's
   * Workers page). An engine that misses `PRESENCE_MISSED_BEATS` (3) beats in a row counts as gone.
   * `false`: never recorded. @default '5s'
   */
  presenceInterval?: Duration | false;
  /**
   * Keep the process alive between `start()` and `stop()`. @default true with the system clock,
   * false with any other clock (tests)
   */
  keepAlive?: boolean;
  /**
   * Largest allowed difference between this engine's clock and the store's (`store.serverTime`,
   * e.g. MongoDB's); past it the engine stops claiming (and says so) until the clocks agree, so a
   * host whose clock is off cannot take over jobs whose leases are still live. `false` turns the
   * check off. @default a tenth of `lease` with the system clock; off with any other clock (a
   * fake clock in tests is far from the database's on purpose)
   */
  maxClockSkew?: Duration | false;
  /**
   * The pool of worker threads that runs `@Job({ sandbox })` jobs: `{ module, threads }` (see
   * {@link SandboxOptions}). `'inline'` runs sandboxed jobs on the engine's thread through
   * `container`/`resolve` instead, with the sandbox's rules still checked (results must be
   * structured-cloneable, `ctx.transaction` is refused): for tests and debugging. Required when
   * some job is sandboxed.
   */
  sandbox?: SandboxOptions | 'inline';
  /**
   * Signed links for wait tokens: `token.url` becomes `<publicUrl>/<token id>?sig=<HMAC of the id>`,
   * for `tokenEndpoint({ loom, secret })` of `@loom/dashboard` mounted at `publicUrl`. Without it
   * tokens have no `url` (settle them with `loom.tokens`).
   */
  waitTokens?: WaitTokenLinkOptions;
  /**
   * How much of its `ctx.log` each job keeps (shown by `loom.jobs.get(id).logs`, `loom jobs logs ID`
   * and the dashboard's job page): its last `lines` lines (1 to `MAX_JOB_LOG_LINES`), weighing at
   * most `bytes` together (4 KiB to `MAX_JOB_LOG_BYTES`; a line weighs its message and fields as
   * UTF-8 plus 32); the oldest are dropped. @default { lines: 100, bytes: 16384 }
   */
  jobLogs?: { lines?: number; bytes?: number };
}

/** {@link LoomOptions} validated, with defaults applied and durations in ms. */
export interface ResolvedLoomOptions {
  /** Where job instances come from: the inversify container, or the `resolve` function. */
  container: JobInstanceSource;
  store: JobStore;
  jobs?: readonly JobClass[];
  concurrency: number;
  queues?: readonly string[];
  leaseMs: number;
  shutdownGraceMs: number;
  pollMs: number;
  clock: Clock;
  logger: Logger;
  random: RandomSource;
  owner: string;
  keepAlive: boolean;
  /** How often presence is recorded, in ms; undefined when it is not (`presenceInterval: false`). */
  presenceMs?: number;
  /** Clock-skew limit in ms, or undefined when not checked. */
  maxClockSkewMs?: number;
  /** The sandbox for `@Job({ sandbox })` jobs, when one was configured. */
  sandbox?: ResolvedSandbox;
  /** Checked `waitTokens`, the public URL without a trailing slash. */
  waitTokens?: WaitTokenLinkOptions;
  /** The checked `jobLogs` caps. */
  jobLogs: { lines: number; bytes: number };
}

/** `jobLogs`: whole numbers within the store's bounds. */
function jobLogCaps(value: LoomOptions['jobLogs']): { lines: number; bytes: number } {
  if (value === undefined) return { lines: DEFAULT_JOB_LOG_LINES, bytes: DEFAULT_JOB_LOG_BYTES };
  if (typeof value !== 'object' || value === null) throw new InvalidArgumentError('Loom option "jobLogs"', 'must be { lines?, bytes? }');
  const { lines = DEFAULT_JOB_LOG_LINES, bytes = DEFAULT_JOB_LOG_BYTES } = value;
  if (!Number.isInteger(lines) || lines < 1 || lines > MAX_JOB_LOG_LINES)
    throw new InvalidArgumentError('Loom option "jobLogs.lines"', `${String(lines)} is not a whole number from 1 to ${MAX_JOB_LOG_LINES}`);
  if (!Number.isInteger(bytes) || bytes < 4096 || bytes > MAX_JOB_LOG_BYTES)
    throw new InvalidArgumentError('Loom option "jobLogs.bytes"', `${String(bytes)} is not a whole number from 4096 to ${MAX_JOB_LOG_BYTES}`);
  return { lines, bytes };
}

function duration(name: string, value: Duration | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  let ms: number;
  try {
    ms = toMs(value);
  } catch (err) {
    throw new InvalidArgumentError(`Loom option "${name}"`, (err as Error).message);
  }
  if (ms < min || ms > MAX_TIMER_MS) throw new InvalidArgumentError(`Loom option "${name}"`, `must be between ${min} ms and ${MAX_TIMER_MS} ms`);
  return ms;
}

/** `container` or `resolve`: exactly one of them, or neither (a new inversify Container). */
function jobInstanceSource(options: LoomOptions): JobInstanceSource {
  const { container, resolve } = options;
  if (container !== undefined && resolve !== undefined) {
    throw new InvalidArgumentError(
      'Loom options "container" and "resolve"',
      'give one of them, not both: `container` builds job classes through inversify, `resolve` through any other DI',
    );
  }
  if (resolve !== undefined) {
    if (typeof resolve !== 'function') throw new InvalidArgumentError('Loom option "resolve"', 'must be a function (jobClass) => instance');
    return resolve;
  }
  if (container === undefined) return new Container();
  if (typeof container !== 'object' || container === null || typeof container.getAsync !== 'function') {
    throw new InvalidArgumentError(
      'Loom option "container"',
      'must be an inversify Container; for any other DI pass `resolve: (jobClass) => instance` instead',
    );
  }
  return container;
}

/** Validates `Loom.create` options; a bad one throws `InvalidArgumentError` naming it. */
export function resolveLoomOptions(options: LoomOptions): ResolvedLoomOptions {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('Loom options', 'must be an object');
  const { store } = options;
  if (typeof store !== 'object' || store === null || typeof store.claim !== 'function') {
    throw new InvalidArgumentError('Loom option "store"', 'must be a JobStore, e.g. new MemoryStore() or new MongoStore({ ... })');
  }
  const concurrency = options.concurrency ?? 10;
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new InvalidArgumentError('Loom option "concurrency"', `${String(concurrency)} is not an integer >= 1`);
  if (options.queues !== undefined && (!Array.isArray(options.queues) || options.queues.some((q) => typeof q !== 'string' || q === ''))) {
    throw new InvalidArgumentError('Loom option "queues"', 'must be an array of non-empty queue names');
  }
  if (options.jobs !== undefined && !Array.isArray(options.jobs)) throw new InvalidArgumentError('Loom option "jobs"', 'must be an array of @Job classes');
  const clock = options.clock ?? new SystemClock();
  const resolved: ResolvedLoomOptions = {
    container: jobInstanceSource(options),
    store,
    concurrency,
    leaseMs: duration('lease', options.lease, 30_000, 3),
    shutdownGraceMs: duration('shutdownGrace', options.shutdownGrace, 10_000, 0),
    pollMs: duration('pollInterval', options.pollInterval, 1_000, 1),
    clock,
    logger: options.logger ?? new ConsoleLogger(),
    random: options.random ?? Math.random,
    owner: options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    keepAlive: options.keepAlive ?? clock instanceof SystemClock,
    jobLogs: jobLogCaps(options.jobLogs),
  };
  if (options.maxClockSkew !== undefined && options.maxClockSkew !== false) {
    resolved.maxClockSkewMs = duration('maxClockSkew', options.maxClockSkew, 0, 1);
  } else if (options.maxClockSkew === undefined && clock instanceof SystemClock) {
    resolved.maxClockSkewMs = Math.max(1, Math.floor(resolved.leaseMs / 10));
  }
  if (options.presenceInterval !== false) resolved.presenceMs = duration('presenceInterval', options.presenceInterval, 5_000, 1);
  if (options.jobs !== undefined) resolved.jobs = options.jobs;
  if (options.queues !== undefined) resolved.queues = options.queues;
  if (options.sandbox !== undefined) resolved.sandbox = resolveSandbox(options.sandbox, concurrency);
  if (options.waitTokens !== undefined) resolved.waitTokens = checkWaitTokenLinkOptions(options.waitTokens);
  return resolved;
}

/** `sandbox`: `'inline'`, or `{ module, threads? }` with the module made a `file:` URL. */
function resolveSandbox(sandbox: SandboxOptions | 'inline', concurrency: number): ResolvedSandbox {
  if (sandbox === 'inline') return { mode: 'inline' };
  const what = 'Loom option "sandbox"';
  if (typeof sandbox !== 'object' || sandbox === null) throw new InvalidArgumentError(what, "must be { module, threads? } or 'inline'");
  const { module, threads } = sandbox;
  let moduleHref: string;
  if (module instanceof URL) moduleHref = module.href;
  else if (typeof module === 'string' && module.startsWith('file:')) moduleHref = module;
  else if (typeof module === 'string' && isAbsolute(module)) moduleHref = pathToFileURL(module).href;
  else throw new InvalidArgumentError(`${what}.module`, "must be a file: URL or an absolute path, e.g. new URL('./sandbox-container.js', import.meta.url)");
  if (threads !== undefined && (!Number.isInteger(threads) || threads < 1)) {
    throw new InvalidArgumentError(`${what}.threads`, `${String(threads)} is not an integer >= 1`);
  }
  return { mode: 'threads', moduleHref, threads: threads ?? Math.max(1, Math.min(concurrency, availableParallelism())) };
}
