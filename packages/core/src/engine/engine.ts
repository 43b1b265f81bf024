import { createScheduling, type Scheduling } from './scheduling.js';
import { ClockSkewGuard } from './clock-skew.js';
import { DeadLetters } from './dead-letters.js';
import { discoverJobs } from '../jobs/discovery.js';
import { Enqueuer } from './enqueuer.js';
import { EventBus, jobEventInfo } from './events.js';
import { FlowControl } from './flow-control.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import { JobRunner } from './job-runner.js';
import { heartbeatInterval } from './lease.js';
import { resolveLoomOptions, type LoomOptions, type ResolvedLoomOptions } from '../loom-options.js';
import { StoreOutage } from './store-outage.js';
import { WorkerPool } from './worker-pool.js';
import { createTelemetry } from '../observability/create-telemetry.js';
import type { Telemetry } from '../observability/telemetry.js';
import { wakeParentsOnFinish } from '../workflow/parent-wake.js';
import { Jobs } from '../operations/jobs.js';
import { Batches } from './batches.js';
import { Queues } from '../operations/queues.js';
import { Sandbox } from '../sandbox/sandbox.js';
import { InvalidArgumentError } from '../support/errors.js';
import { Tokens } from '../operations/tokens.js';
import { DependencySettler } from './dependency-settler.js';
import { Flows } from '../operations/flows.js';
import { Workers } from '../operations/workers.js';
import { PresenceBeat } from './presence.js';
import { StoreMaintenance } from './store-maintenance.js';

/** The modules one engine is made of; `Loom` is the facade over them. */
export interface Engine {
  options: ResolvedLoomOptions;
  registry: JobRegistry;
  events: EventBus;
  enqueuer: Enqueuer;
  pool: WorkerPool;
  deadLetters: DeadLetters;
  scheduling: Scheduling;
  /** Traces and metrics (OpenTelemetry when `@opentelemetry/api` is installed). */
  telemetry: Telemetry;
  /** Present when clock skew is checked (`maxClockSkew`) and the store can tell its time. */
  skewGuard?: ClockSkewGuard;
  jobs: Jobs;
  queues: Queues;
  batches: Batches;
  tokens: Tokens;
  flow: FlowControl;
  /** Runs `@Job({ sandbox })` jobs; present when `Loom.create({ sandbox })` was given. */
  sandbox?: Sandbox;
  /** Settles the dependents of finished jobs (`dependsOn`). */
  dependencies: DependencySettler;
  flows: Flows;
  /** Reads the engines' presence rows (`loom.workers`). */
  workers: Workers;
  /** Records this engine's presence while it runs; absent with `presenceInterval: false`. */
  presence?: PresenceBeat;
  /** Runs the store's periodic housekeeping (`JobStore.maintain`) while started. */
  maintenance: StoreMaintenance;
}

/**
 * Builds an engine: validates options, discovers and builds the jobs, initialises the store and
 * wires the modules together. Nothing runs until `pool.start()` / `scheduling.start()`.
 */
export async function buildEngine(loomOptions: LoomOptions): Promise<Engine> {
  const options = resolveLoomOptions(loomOptions);
  const { store, clock, logger } = options;
  const threads = options.sandbox?.mode === 'threads';
  const { registry, instances } = await discoverJobs(options.container, options.jobs, (def) => threads && def.sandbox !== undefined);
  const sandboxed = registry.all().filter((def) => def.sandbox !== undefined);
  if (sandboxed.length > 0 && options.sandbox === undefined) {
    throw new InvalidArgumentError(
      'Loom option "sandbox"',
      `is required: job ${sandboxed.map((d) => `"${d.name}"`).join(', ')} ${sandboxed.length === 1 ? 'is' : 'are'} sandboxed (@Job({ sandbox })). ` +
        "Give { module: new URL('./sandbox-container.js', import.meta.url) }, the module that builds the job classes in each thread, or 'inline'",
    );
  }
  const sandbox = options.sandbox ? new Sandbox({ sandbox: options.sandbox, registry, logger, instances }) : undefined;
  const events = new EventBus(logger);
  const telemetry = await createTelemetry({ store, clock, logger });
  // Late-bound: the enqueuer and dead letters wake the pool, which is built after them.
  let pool: WorkerPool | undefined;
  const wake = (): void => pool?.wake();
  const outage = new StoreOutage({ store, clock, logger });
  const dependencies = new DependencySettler({ store, clock, logger, events, pollMs: options.pollMs, leaseMs: options.leaseMs, onQueued: wake, outage });
  const enqueuer = new Enqueuer({
    store,
    registry,
    clock,
    telemetry,
    onEnqueued: (jobs) => pool?.noteEnqueued(jobs),
    onDependsOn: (ids) => dependencies.watch(ids),
  });
  const scheduling = createScheduling({ store, clock, logger, registry, events, enqueuer, leaseMs: options.leaseMs });
  await store.init();
  const workflow = { enqueuer, registry, wakeWorkers: wake, ...(options.waitTokens ? { waitTokenLinks: options.waitTokens } : {}) };
  wakeParentsOnFinish({ events, store, clock, logger, onWoken: wake });
  const flow = new FlowControl({ store, clock, logger, events, registry, pollMs: options.pollMs, leaseMs: options.leaseMs, wake, outage });
  const runner = new JobRunner({
    store,
    clock,
    logger,
    events,
    registry,
    instances,
    leaseMs: options.leaseMs,
    random: options.random,
    workflow,
    telemetry,
    flow,
    outage,
    jobLogs: options.jobLogs,
    ...(sandbox ? { sandbox } : {}),
  });
  const skewGuard =
    options.maxClockSkewMs !== undefined && store.serverTime
      ? new ClockSkewGuard({
          store,
          clock,
          logger,
          events,
          maxSkewMs: options.maxClockSkewMs,
          everyMs: Math.max(1_000, heartbeatInterval(options.leaseMs)),
          deadlineMs: options.leaseMs,
          onUnblocked: wake,
        })
      : undefined;
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
    ...(skewGuard ? { canClaim: () => skewGuard.allowsClaims } : {}),
    flow,
    outage,
  });
  const deadLetters = new DeadLetters({ store, clock, logger, onReplayed: wake });
  const running = pool;
  const jobs = new Jobs({
    store,
    clock,
    logger,
    hooks: {
      onCancelled: (job, reason) => events.emit('job:cancelled', reason === undefined ? { job: jobEventInfo(job) } : { job: jobEventInfo(job), reason }),
      // A run of it in this process stops now, not at its next heartbeat.
      onCancelRequested: (jobId, reason) => running.requestCancel(jobId, reason),
      onQueued: wake,
    },
  });
  const queues = new Queues({
    store,
    clock,
    hooks: {
      onPaused: (queue) => {
        running.notePaused(queue, true);
        events.emit('queue:paused', { queue });
      },
      onResumed: (queue) => {
        running.notePaused(queue, false);
        events.emit('queue:resumed', { queue });
      },
    },
  });
  const tokens = new Tokens({ store, clock, hooks: { onSettled: wake } });
  const batches = new Batches({ store, clock, enqueuer });
  const presence =
    options.presenceMs === undefined
      ? undefined
      : new PresenceBeat({
          store,
          clock,
          logger,
          outage,
          id: options.owner,
          everyMs: options.presenceMs,
          queues: options.queues ?? registry.queues(),
          concurrency: options.concurrency,
          running: () => running.inFlight().map((run) => run.jobId),
        });
  return {
    options,
    registry,
    events,
    enqueuer,
    pool,
    deadLetters,
    scheduling,
    telemetry,
    jobs,
    queues,
    batches,
    tokens,
    flow,
    dependencies,
    flows: new Flows({ enqueuer, registry }),
    maintenance: new StoreMaintenance({ store, clock, logger }),
    workers: new Workers({ store, clock }),
    ...(presence ? { presence } : {}),
    ...(skewGuard ? { skewGuard } : {}),
    ...(sandbox ? { sandbox } : {}),
  };
}
