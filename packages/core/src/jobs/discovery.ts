import type { Container } from 'inversify';
import { InvalidJobClassError } from '../support/engine-errors.js';
import type { JobClass, JobHandler } from './job-class.js';
import { decoratedJobClasses } from './job-metadata.js';
import { JobRegistry } from './job-registry.js';

/** The jobs an engine runs: their validated definitions and one container-built instance each. */
export interface DiscoveredJobs {
  registry: JobRegistry;
  /** Handler instances by job name. */
  instances: Map<string, JobHandler>;
}

/**
 * How discovery works: `@Job` records each decorated class (through the metadata accessor) as its
 * module is loaded. The engine takes `jobs` when given, otherwise every class recorded so far,
 * validates them into a {@link JobRegistry}, binds each class to the container (`toSelf`, singleton)
 * unless the container already has a binding for it, and resolves it through the container so its
 * constructor dependencies are injected.
 */
export async function discoverJobs(container: Container, jobs?: readonly JobClass[]): Promise<DiscoveredJobs> {
  const registry = new JobRegistry(jobs ?? decoratedJobClasses());
  const instances = new Map<string, JobHandler>();
  for (const def of registry.all()) {
    const cls = def.jobClass as unknown as new (...args: any[]) => JobHandler;
    if (!container.isBound(cls)) container.bind(cls).toSelf().inSingletonScope();
    let instance: JobHandler;
    try {
      instance = await container.getAsync(cls);
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      throw new InvalidJobClassError(def.className, `could not be built by the container: ${detail}`);
    }
    if (typeof instance?.run !== 'function') throw new InvalidJobClassError(def.className, 'was resolved by the container to something without a run method');
    instances.set(def.name, instance);
  }
  return { registry, instances };
}
