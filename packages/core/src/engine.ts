import { compileSchedule } from './cron/schedule-options.js';
import { DeadLetters } from './dead-letters.js';
import { discoverJobs } from './discovery.js';
import { Enqueuer } from './enqueuer.js';
import { EventBus } from './events.js';
import type { JobRegistry } from './job-registry.js';
import { JobRunner } from './job-runner.js';
import { resolveLoomOptions, type LoomOptions, type ResolvedLoomOptions } from './loom-options.js';
import { WorkerPool } from './worker-pool.js';
import { wakeParentsOnFinish } from './workflow/parent-wake.js';

/** Starts and stops cron schedules with the engine. */
export interface Scheduling {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The modules one engine is made of; `Loom` is the facade over them. */
export interface Engine {
  options: ResolvedLoomOptions;
  registry: JobRegistry;
  events: EventBus;
  enqueuer: Enqueuer;
  pool: WorkerPool;
  deadLetters: DeadLetters;
  scheduling: Scheduling;
}

/**
 * Builds an engine: validates options, discovers and builds the jobs, initialises the store and
 * wires the modules together. Nothing runs until `pool.start()` / `scheduling.start()`.
 */
export async function buildEngine(loomOptions: LoomOptions): Promise<Engine> {
  const options = resolveLoomOptions(loomOptions);
  const { store, clock, logger } = options;
  const { registry, instances } = await discoverJobs(options.container, options.jobs);
  const events = new EventBus(logger);
  // Late-bound: the enqueuer and dead letters wake the pool, which is built after them.
  let pool: WorkerPool | undefined;
  const wake = (): void => pool?.wake();
  const enqueuer = new Enqueuer({ store, registry, clock, onEnqueued: wake });
  const scheduling = createScheduling({ options, registry, events, enqueuer });
  await store.init();
  const workflow = { enqueuer, registry, wakeWorkers: wake };
  wakeParentsOnFinish({ events, store, clock, logger, onWoken: wake });
  const runner = new JobRunner({ store, clock, logger, events, registry, instances, leaseMs: options.leaseMs, random: options.random, workflow });
  pool = new WorkerPool({
    store,
    clock,
    logger,
    events,
    registry,
    runner,
    owner: options.owner,
    concurrency: options.concurrency,
    queues: options.queues ?? registry.queues(),
    leaseMs: options.leaseMs,
    pollMs: options.pollMs,
  });
  const deadLetters = new DeadLetters({ store, clock, onReplayed: wake });
  return { options, registry, events, enqueuer, pool, deadLetters, scheduling };
}

/**
 * The cron hook. Compiles every job's `schedule` option (a bad one fails `Loom.create` with an
 * `InvalidJobOptionsError` naming the class) and returns what starts and stops the scheduler with
 * the engine. Fires go through `enqueuer.enqueueFire(jobName, fireAt, payload)`: idempotency key
 * `cron:<jobName>:<fireAt ISO>`, `scheduledFor = runAt = fireAt`.
 */
function createScheduling(deps: { options: ResolvedLoomOptions; registry: JobRegistry; events: EventBus; enqueuer: Enqueuer }): Scheduling {
  const schedules = deps.registry
    .all()
    .filter((def) => def.schedule !== undefined)
    .map((def) => ({ jobName: def.name, className: def.className, schedule: compileSchedule(def.className, def.schedule) }));
  if (schedules.length > 0) {
    deps.options.logger.warn(
      { jobs: schedules.map((s) => s.jobName) },
      'These jobs have a cron schedule, but the scheduler is not wired into the engine yet; they only run when enqueued',
    );
  }
  return { start: async () => {}, stop: async () => {} };
}
