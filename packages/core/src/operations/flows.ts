import type { JobClass, PayloadOf } from '../jobs/job-class.js';
import type { JobDefinition } from '../jobs/job-definition.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import type { EnqueueResult } from '../store/job-record.js';
import type { EnqueueOptions } from '../store/enqueue-options.js';
import { InvalidArgumentError } from '../support/errors.js';

/** One node of a flow: a job to enqueue, and what it runs after. */
export interface FlowNode<C extends JobClass = JobClass> {
  job: C;
  payload?: PayloadOf<C>;
  /** Names of other nodes of the flow, or ids of stored jobs, this node runs after. */
  dependsOn?: readonly string[];
  /** Per-node enqueue options (`priority`, `delay`, `runAt`, `idempotencyKey`, `onDependencyFailure`). */
  options?: Omit<EnqueueOptions, 'session' | 'dependsOn'>;
}

/** What {@link Flows} stores a flow with: the engine's enqueuer (`Enqueuer.enqueueFlow`). */
export interface FlowEnqueuer {
  enqueueFlow(
    nodes: readonly { def: JobDefinition; payload: unknown; opts: EnqueueOptions; batchDeps: number[] }[],
    names: readonly string[],
    session: unknown,
  ): Promise<EnqueueResult[]>;
}

/** A DAG of jobs for {@link Flows.add}: nodes by name. */
export interface FlowDefinition {
  nodes: Record<string, FlowNode>;
}

/** What {@link Flows.add} stored: each node's job id, by node name. */
export interface FlowResult {
  ids: Record<string, string>;
}

/**
 * `loom.flows`: enqueue a DAG of jobs in one call.
 *
 * ```ts
 * const flow = await loom.flows.add({
 *   nodes: {
 *     prices: { job: FetchPrices, payload: { day } },
 *     rates: { job: FetchRates, payload: { day } },
 *     report: { job: BuildReport, payload: { day }, dependsOn: ['prices', 'rates'] },
 *   },
 * });
 * // flow.ids.report: waiting until prices and rates have completed
 * ```
 */
export class Flows {
  constructor(private readonly deps: { enqueuer: FlowEnqueuer; registry: JobRegistry }) {}

  /**
   * Enqueues every node, all or nothing (one store write; a transaction on MongoDB). A node's
   * `dependsOn` names other nodes or ids of stored jobs; a node with dependencies waits (`waiting`,
   * `waitingFor.dependencies`) until they have all completed. A name that is neither a node nor a
   * stored job, or a cycle, is refused with an `InvalidDependenciesError` (`INVALID_DEPENDENCIES`)
   * and nothing is stored; so is a refused payload (`INVALID_PAYLOAD`). `options.session` stores
   * the flow in your transaction.
   */
  async add(flow: FlowDefinition, options: { session?: unknown } = {}): Promise<FlowResult> {
    if (typeof flow !== 'object' || flow === null || typeof flow.nodes !== 'object' || flow.nodes === null) {
      throw new InvalidArgumentError('flows.add', 'give { nodes: { name: { job, payload, dependsOn? } } }; nothing was stored');
    }
    const names = Object.keys(flow.nodes);
    const position = new Map(names.map((name, i) => [name, i]));
    const nodes = names.map((name) => {
      const node = flow.nodes[name]!;
      if (typeof node !== 'object' || node === null) throw new InvalidArgumentError(`flows.add node "${name}"`, 'must be { job, payload, dependsOn? }');
      const given: unknown = node.dependsOn ?? [];
      if (!Array.isArray(given) || given.some((d) => typeof d !== 'string')) {
        throw new InvalidArgumentError(`flows.add node "${name}" dependsOn`, 'must be an array of node names or job ids');
      }
      const deps = given as string[];
      const batchDeps = deps.filter((d) => position.has(d)).map((d) => position.get(d)!);
      const external = deps.filter((d) => !position.has(d));
      const opts: EnqueueOptions = { ...(node.options ?? {}) };
      if (external.length > 0) opts.dependsOn = external;
      const payload: unknown = node.payload;
      return { def: this.deps.registry.byClass(node.job), payload, opts, batchDeps };
    });
    const results = await this.deps.enqueuer.enqueueFlow(nodes, names, options.session);
    return { ids: Object.fromEntries(names.map((name, i) => [name, results[i]!.id])) };
  }
}
