import type { Container } from 'inversify';
import { InvalidJobClassError } from '../support/errors.js';
import type { JobClass, JobHandler } from './job-class.js';
import { decoratedJobClasses } from './job-metadata.js';
import type { JobDefinition } from './job-definition.js';
import { JobRegistry } from './job-registry.js';

/**
 * `Loom.create({ resolve })`: builds the instance of one `@Job` class with a DI other than
 * inversify (Nest, tsyringe, hand-written). Called once per job class, while `Loom.create` runs.
 */
export type ResolveJob = (jobClass: JobClass) => JobHandler | Promise<JobHandler>;

/** Where job instances come from: an inversify container, or a {@link ResolveJob} function. */
export type JobInstanceSource = Container | ResolveJob;

/** The jobs an engine runs: their validated definitions and one instance each. */
export interface DiscoveredJobs {
  registry: JobRegistry;
  /** Handler instances by job name. */
  instances: Map<string, JobHandler>;
}

/**
 * How discovery works: `@Job` records each decorated class (through the metadata accessor) as its
 * module is loaded. The engine takes `jobs` when given, otherwise every class recorded so far,
 * and validates them into a {@link JobRegistry}. Each class is then built once: by the `resolve`
 * function when one was given, otherwise through the container, which gets a binding for the class
 * (`toSelf`, singleton) unless it already has one, so constructor dependencies are injected.
 */
export async function discoverJobs(
  source: JobInstanceSource,
  jobs?: readonly JobClass[],
  /** Jobs not to build here: sandboxed jobs are built inside their threads. */
  skip?: (def: JobDefinition) => boolean,
): Promise<DiscoveredJobs> {
  const registry = new JobRegistry(jobs ?? decoratedJobClasses());
  const instances = new Map<string, JobHandler>();
  const builder = typeof source === 'function' ? 'resolve' : 'the container';
  for (const def of registry.all()) {
    if (skip?.(def)) continue;
    let instance: JobHandler;
    try {
      instance = typeof source === 'function' ? await source(def.jobClass) : await fromContainer(source, def.jobClass);
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      throw new InvalidJobClassError(def.className, `could not be built by ${builder}: ${detail}`);
    }
    const handler = def.batch ? 'runBatch' : 'run';
    if (typeof (instance as unknown as Record<string, unknown> | undefined)?.[handler] !== 'function') {
      throw new InvalidJobClassError(def.className, `was resolved by ${builder} to something without a ${handler} method`);
    }
    instances.set(def.name, instance);
  }
  return { registry, instances };
}

function fromContainer(container: Container, jobClass: JobClass): Promise<JobHandler> {
  const cls = jobClass as unknown as new (...args: any[]) => JobHandler;
  if (!container.isBound(cls)) container.bind(cls).toSelf().inSingletonScope();
  return container.getAsync(cls);
}
