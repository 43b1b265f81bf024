import type { Clock } from '../support/clock.js';
import { toMs } from '../support/duration.js';
import { InvalidArgumentError, TransactionsUnsupportedError } from '../support/errors.js';
import type { EnqueueOptions } from '../store/enqueue-options.js';
import { resolveFlowKeys } from './flow-keys.js';
import { resolveIdempotencyKey } from './idempotency-key.js';
import type { JobClass } from '../jobs/job-class.js';
import type { JobDefinition } from '../jobs/job-definition.js';
import type { DependencyFailurePolicy, EnqueueResult, NewJob } from '../store/job-record.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import { checkPayload } from './payload-check.js';
import { checkBatchDependencies } from '../store/dependencies.js';
import type { JobStore } from '../store/store.js';
import { payloadLimitsOf } from '../store/payload-limits.js';
import type { Telemetry } from '../observability/telemetry.js';
import type { EnqueuedJob } from './claim-demand.js';

/** Internal extras of an enqueue that users do not set directly (cron fires, child jobs). */
export interface EnqueueExtras {
  scheduledFor?: Date;
  parentId?: string;
}

const POLICIES: readonly DependencyFailurePolicy[] = ['fail', 'cancel', 'run'];

/** The `dependsOn` and `onDependencyFailure` of an enqueue, checked (empty when it has none). */
export function dependencyOptions(
  def: JobDefinition,
  opts: Pick<EnqueueOptions, 'dependsOn' | 'onDependencyFailure'>,
): Pick<NewJob, 'dependsOn' | 'onDependencyFailure'> {
  const { dependsOn, onDependencyFailure } = opts;
  if (onDependencyFailure !== undefined && !POLICIES.includes(onDependencyFailure)) {
    throw new InvalidArgumentError(
      'onDependencyFailure',
      `must be one of ${POLICIES.map((p) => `'${p}'`).join(', ')}, got ${JSON.stringify(onDependencyFailure)}`,
    );
  }
  if (dependsOn === undefined) return {};
  if (!Array.isArray(dependsOn) || dependsOn.some((id) => typeof id !== 'string' || id === '')) {
    throw new InvalidArgumentError('dependsOn', 'must be an array of job ids (non-empty strings, as returned by enqueue)');
  }
  if (def.debounce && dependsOn.length > 0)
    throw new InvalidArgumentError('dependsOn', `job "${def.name}" is debounced: a debounced job cannot have dependencies`);
  if (dependsOn.length === 0) return {};
  return onDependencyFailure === undefined ? { dependsOn: [...new Set(dependsOn)] } : { dependsOn: [...new Set(dependsOn)], onDependencyFailure };
}

/**
 * Turns `enqueue` calls into validated {@link NewJob}s and stores them. Everything is checked
 * before the store is called, so a refused call stores nothing (also in a batch).
 */
export class Enqueuer {
  constructor(
    private readonly deps: {
      store: JobStore;
      registry: JobRegistry;
      clock: Clock;
      /** Wraps each store write in a `publish` span and stamps the jobs with its trace context. */
      telemetry: Telemetry;
      /** Called with the jobs stored (not the deduplicated ones), so local workers can claim them at once. */
      onEnqueued: (jobs: EnqueuedJob[]) => void;
      /** Called with the jobs a new job depends on, before it is stored: their ends must settle it. */
      onDependsOn?: (ids: readonly string[]) => void;
    },
  ) {}

  async enqueue(jobClass: JobClass, payload: unknown, opts: EnqueueOptions = {}): Promise<EnqueueResult> {
    return this.enqueueDefinition(this.deps.registry.byClass(jobClass), payload, opts);
  }

  async enqueueMany(jobClass: JobClass, payloads: readonly unknown[], opts: EnqueueOptions = {}): Promise<EnqueueResult[]> {
    if (!Array.isArray(payloads)) throw new InvalidArgumentError('enqueueMany payloads', 'must be an array');
    const def = this.deps.registry.byClass(jobClass);
    const now = this.deps.clock.now();
    const jobs = payloads.map((payload, i) => this.prepare(def, payload, opts, now, {}, `[${i}]`));
    return this.store(def, jobs, true, now, opts.session);
  }

  /**
   * Enqueues a cron fire: idempotency key `cron:<jobName>:<fireAt ISO>` (one job per slot, however
   * many schedulers race), `scheduledFor` and `runAt` = the fire time.
   */
  async enqueueFire(jobName: string, fireAt: Date, payload: unknown): Promise<EnqueueResult> {
    const def = this.deps.registry.byName(jobName);
    if (!def) throw new InvalidArgumentError('cron job name', `no job named "${jobName}" is registered`);
    return this.enqueueDefinition(def, payload, { runAt: fireAt, idempotencyKey: `cron:${jobName}:${fireAt.toISOString()}` }, { scheduledFor: fireAt });
  }

  /** Enqueues by definition; the seam for child jobs (`parentId`) and cron fires. */
  async enqueueDefinition(def: JobDefinition, payload: unknown, opts: EnqueueOptions, extras: EnqueueExtras = {}): Promise<EnqueueResult> {
    const now = this.deps.clock.now();
    const [result] = await this.store(def, [this.prepare(def, payload, opts, now, extras, '')], false, now, opts.session);
    return result!;
  }

  /**
   * A checked job of `jobClass` that is not stored yet (a batch's member or callback, which
   * `loom.batches.create` stores together); `path` prefixes the payload paths of errors.
   */
  prepareJob(jobClass: JobClass, payload: unknown, opts: EnqueueOptions, now: Date, path: string): NewJob {
    return this.prepare(this.deps.registry.byClass(jobClass), payload, opts, now, {}, path);
  }

  /** Tells local workers of jobs stored by another path than {@link enqueue} (a batch's members). */
  announce(jobs: EnqueuedJob[]): void {
    if (jobs.length > 0) this.deps.onEnqueued(jobs);
  }

  /**
   * Enqueues a DAG in one store call (`loom.flows.add`): `nodes[i].dependsOn` are node positions
   * (`dependsOnBatch`) and/or stored job ids. The edges are checked (cycles named by `names`)
   * before the store is called; the store stores all or nothing.
   */
  async enqueueFlow(
    nodes: readonly { def: JobDefinition; payload: unknown; opts: EnqueueOptions; batchDeps: number[] }[],
    names: readonly string[],
    session: unknown,
  ): Promise<EnqueueResult[]> {
    if (nodes.length === 0) return [];
    const now = this.deps.clock.now();
    const jobs = nodes.map(({ def, payload, opts, batchDeps }, i) => {
      const job = this.prepare(def, payload, opts, now, {}, `${names[i]}.payload`);
      if (batchDeps.length > 0) job.dependsOnBatch = batchDeps;
      if (job.dependsOnBatch !== undefined && opts.onDependencyFailure !== undefined) job.onDependencyFailure = opts.onDependencyFailure;
      return job;
    });
    checkBatchDependencies(jobs, names);
    return this.store(nodes[0]!.def, jobs, true, now, session);
  }

  private prepare(def: JobDefinition, payload: unknown, opts: EnqueueOptions, now: Date, extras: EnqueueExtras, pathPrefix: string): NewJob {
    if (typeof opts !== 'object' || opts === null) throw new InvalidArgumentError('enqueue options', 'must be an object');
    const parsed = checkPayload(def, payload, pathPrefix, payloadLimitsOf(this.deps.store));
    if (def.debounce && (opts.delay !== undefined || opts.runAt !== undefined || opts.idempotencyKey !== undefined)) {
      throw new InvalidArgumentError(
        'enqueue options',
        `job "${def.name}" is debounced: it starts ${def.debounce.delayMs} ms after the last enqueue of its key, so \`delay\`, \`runAt\` and \`idempotencyKey\` cannot be given`,
      );
    }
    const idempotencyKey = resolveIdempotencyKey(def, parsed, opts.idempotencyKey);
    const job: NewJob = {
      name: def.name,
      queue: def.queue,
      payload,
      priority: this.priority(opts.priority ?? def.priority),
      runAt: def.debounce ? new Date(now.getTime() + def.debounce.delayMs) : this.runAt(opts, now),
      maxAttempts: def.maxAttempts,
      ...resolveFlowKeys(def, parsed),
    };
    if (idempotencyKey !== undefined) job.idempotencyKey = idempotencyKey;
    Object.assign(job, dependencyOptions(def, opts));
    if (extras.parentId !== undefined) job.parentId = extras.parentId;
    if (extras.scheduledFor !== undefined) job.scheduledFor = extras.scheduledFor;
    return job;
  }

  private priority(value: unknown): number {
    if (typeof value !== 'number' || !Number.isInteger(value)) throw new InvalidArgumentError('priority', `${String(value)} is not an integer`);
    return value;
  }

  private runAt(opts: EnqueueOptions, now: Date): Date {
    if (opts.delay !== undefined && opts.runAt !== undefined) throw new InvalidArgumentError('enqueue options', 'give either `delay` or `runAt`, not both');
    if (opts.runAt !== undefined) {
      if (!(opts.runAt instanceof Date) || Number.isNaN(opts.runAt.getTime())) throw new InvalidArgumentError('runAt', 'must be a valid Date');
      return new Date(opts.runAt.getTime());
    }
    if (opts.delay !== undefined) {
      try {
        return new Date(now.getTime() + toMs(opts.delay));
      } catch (err) {
        throw new InvalidArgumentError('delay', (err as Error).message);
      }
    }
    return now;
  }

  /** Stores checked jobs of `def`; `batch` for `enqueueMany` (its runs link to the publish span instead of continuing its trace). */
  private async store(def: JobDefinition, jobs: NewJob[], batch: boolean, now: Date, session: unknown): Promise<EnqueueResult[]> {
    if (jobs.length === 0) return [];
    if (session !== undefined && !this.deps.store.withTransaction) throw new TransactionsUnsupportedError('enqueue with { session }');
    const { store } = this.deps;
    for (const job of jobs) if (job.dependsOn !== undefined && job.dependsOn.length > 0) this.deps.onDependsOn?.(job.dependsOn);
    const results = await this.deps.telemetry.publish(def, jobs, batch, () => store.enqueue(jobs, session === undefined ? { now } : { now, session }));
    // Inside a caller's transaction the jobs are invisible until it commits: a wake now would claim
    // nothing. The store announces them once committed (subscribe), or the next poll finds them.
    if (session === undefined) {
      const stored: EnqueuedJob[] = [];
      for (let i = 0; i < results.length; i++) if (!results[i]!.deduplicated) stored.push({ id: results[i]!.id, queue: jobs[i]!.queue, runAt: jobs[i]!.runAt });
      if (stored.length > 0) this.deps.onEnqueued(stored);
    }
    return results;
  }
}
